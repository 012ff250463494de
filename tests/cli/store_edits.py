"""Edit a valid store file with SQL and seal it again (checksums that match the edit), for the
CLI tests: the helper is the fuzzer's (tests/readers/store_mutations.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "readers"))

from store_mutations import edited_store  # noqa: E402

__all__ = ["edited_store"]
