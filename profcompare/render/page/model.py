"""The page model: frozen dataclasses of display strings that the terminal text, the Markdown,
the HTML page and the notebook all draw (:class:`Section` -> :class:`Table` -> :class:`Row` ->
:class:`Cell`).

A builder formats every figure once, into these classes; a drawer only lays them out and
ignores what its medium cannot show (the terminal and Markdown have no sort keys, tooltips,
row filters or charts). Nothing here imports a builder or a drawer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from profcompare.render.interactive import InteractiveChart

#: tones a cell may carry: growth that costs ("bad"), savings ("good"), aggregate rows ("muted")
TONES = ("bad", "good", "muted")


@dataclass(frozen=True)
class Cell:
    """One table cell: the text shown, the key a page sorts it by (None: by its text), its tone
    (None or one of :data:`TONES`), a tooltip (``title``, e.g. the exact byte count) and a
    ``swatch``: a colour (``#rrggbb``) a page draws as a small square before the text, e.g. the
    colour the execution trace gives a program's kind (the text still says the kind)."""

    text: str
    sort: float | str | None = None
    tone: str | None = None
    title: str | None = None
    swatch: str | None = None


@dataclass(frozen=True)
class Column:
    """A table column: its header, whether it holds numbers (right-aligned, sorted as numbers)
    and a key naming it on a page (its CSS and sort hook; empty where nothing names it).

    ``hidden``: a page with a column chooser (:attr:`Table.column_chooser`) shows the column
    only once the reader ticks it, keeping a wide table narrow; the terminal, Markdown and the
    exports draw every column."""

    header: str
    numeric: bool = False
    key: str = ""
    hidden: bool = False

    @property
    def title(self) -> str:
        """The header (the name page templates use)."""
        return self.header


@dataclass(frozen=True)
class Row:
    """One table row: its cells plus the ``data-*`` attributes a page's filter matches (e.g.
    status, name). A row reads as the sequence of its cells (``row[0]``, ``for cell in row``).

    ``members``: rows a page holds hidden right after this one, to be shown on demand (the
    programs a folded run of the program tree stands for); the terminal, Markdown and the
    exports draw the row alone. ``classes``: CSS classes a page gives the row (e.g.
    ``status-added``: a mark beside what its text already says).

    ``detail``: JSON-ready data a page shows in a panel when the reader asks for the row's
    details (an op's program steps and figures); None for none. Other media ignore it."""

    cells: tuple[Cell, ...]
    data: Mapping[str, str] = field(default_factory=dict)
    members: tuple[Row, ...] = ()
    classes: tuple[str, ...] = ()
    detail: Mapping[str, Any] | None = None

    def __iter__(self) -> Iterator[Cell]:
        return iter(self.cells)

    def __len__(self) -> int:
        return len(self.cells)

    @overload
    def __getitem__(self, index: int) -> Cell: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Cell, ...]: ...

    def __getitem__(self, index: int | slice) -> Cell | tuple[Cell, ...]:
        return self.cells[index]


@dataclass(frozen=True)
class TableFilter:
    """Filter controls above a table: a text box matching each row's ``data-name`` (substring,
    case-insensitive) and one select box per ``(data attribute, label, options)``."""

    placeholder: str
    selects: tuple[tuple[str, str, tuple[str, ...]], ...] = ()


#: A table of more than FOLD_OVER body rows shows its first FOLDED_ROWS (in its current sort
#: order, among the rows its filter keeps) and an expander that shows them all: the variables
#: (hundreds of rows), code and ledger rows would otherwise make the page tens of screens tall.
FOLD_OVER = 15
FOLDED_ROWS = 10


@dataclass(frozen=True)
class Table:
    """A table: columns, body rows (one cell per column), an optional footer ("other"/total)
    row, a note, and for a page its id, whether it sorts, what it says when empty, its filter
    controls and whether its rows are a ``tree`` (rows carrying ``data-id``, ``data-parent`` and
    ``data-depth``; a page gives each row with children a toggle that hides or shows them, and
    "Expand all" / "Collapse all" buttons).

    ``column_chooser``: a page gives the table a control listing its columns with checkboxes,
    the :attr:`Column.hidden` ones unticked, that hides or shows each column."""

    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    id: str = ""
    footer: tuple[Row, ...] = ()
    note: str = ""
    sortable: bool = True
    empty: str = "nothing to show"
    filter: TableFilter | None = None
    tree: bool = False
    column_chooser: bool = False

    @property
    def has_details(self) -> bool:
        """Whether any body row carries a :attr:`Row.detail` (a page then embeds them)."""
        return any(row.detail is not None for row in self.rows)

    @classmethod
    def of(cls, columns: Iterable[Column], rows: Iterable[Sequence[Cell]]) -> Table:
        """Return a table of ``columns`` whose rows are the cell sequences ``rows`` (no row data,
        no page fields): the tables of the text and Markdown sections."""
        return cls(tuple(columns), tuple(Row(tuple(cells)) for cells in rows))

    @property
    def fold(self) -> int:
        """How many body rows a page shows before its "show all" expander: :data:`FOLDED_ROWS`
        for a table of more than :data:`FOLD_OVER` rows, 0 (every row, no expander) otherwise."""
        return FOLDED_ROWS if len(self.rows) > FOLD_OVER else 0


@dataclass(frozen=True)
class Section:
    """A titled part of a page or document: ``items`` (plain statements, drawn as a list before
    the tables), its tables, then ``notes``; on a page also its ``id`` (the navigation anchor), a
    lead ``text`` and chart specifications (``charts``, which text and Markdown do not draw).

    ``notes_on_table``: a page shows the notes as its first table's note, one paragraph at the
    table, rather than as paragraphs under the title (text and Markdown draw them after the
    tables either way).

    ``folded``: a page shows the section closed until it is opened (a detail view, see
    :mod:`profcompare.render.page.fold`), its title and ``headline`` (one line: its most
    important figure) standing for it; other media show every section whole."""

    title: str
    tables: tuple[Table, ...] = ()
    notes: tuple[str, ...] = ()
    items: tuple[str, ...] = ()
    id: str = ""
    text: str = ""
    charts: tuple[InteractiveChart, ...] = ()
    notes_on_table: bool = False
    folded: bool = False
    headline: str = ""

    @property
    def table(self) -> Table | None:
        """The first table, or None for a section without one."""
        return self.tables[0] if self.tables else None

    @property
    def lines(self) -> tuple[str, ...]:
        """The items (the name the text sections use)."""
        return self.items


def drawn_rows(table: Table) -> tuple[Row, ...]:
    """The rows a medium without a footer draws (the terminal, Markdown): the body rows, then the
    footer rows ("other", total) with every untoned cell muted, so they read as aggregates."""
    footer = tuple(Row(tuple(replace(cell, tone=cell.tone or "muted") for cell in row), row.data)
                   for row in table.footer)
    return table.rows + footer


def placed_for_page(section: Section) -> Section:
    """Return ``section`` as a page shows it: with ``notes_on_table``, its notes joined into its
    first table's note (after any note the table has); otherwise ``section`` itself."""
    if not (section.notes_on_table and section.tables and section.notes):
        return section
    first, *rest = section.tables
    note = " ".join((first.note, *section.notes) if first.note else section.notes)
    return replace(section, tables=(replace(first, note=note), *rest), notes=(), notes_on_table=False)


__all__ = ["FOLDED_ROWS", "FOLD_OVER", "TONES", "Cell", "Column", "Row", "Section", "Table", "TableFilter", "drawn_rows", "placed_for_page"]
