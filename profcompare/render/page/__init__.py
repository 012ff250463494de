"""The one page model every output is drawn from: :mod:`profcompare.render.page.model`."""

from __future__ import annotations

from profcompare.render.page.model import TONES, Cell, Column, Row, Section, Table, TableFilter

__all__ = ["TONES", "Cell", "Column", "Row", "Section", "Table", "TableFilter"]
