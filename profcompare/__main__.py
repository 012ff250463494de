"""``python -m profcompare`` runs the command line."""

from __future__ import annotations

import sys

from profcompare.cli import main

sys.exit(main())
