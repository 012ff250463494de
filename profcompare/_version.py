"""The version of profcompare, in a module of its own so that any layer can import it
without importing the package's public API (and so without import cycles)."""

from __future__ import annotations

__version__ = "0.1.0"
