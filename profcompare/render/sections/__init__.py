"""What a human-readable report says, independent of how it is drawn.

The text (terminal) and markdown renderers show the same content; this package prepares it
once, as a :class:`Document` of sections of the one page model the HTML page is drawn from too
(:mod:`profcompare.render.page.model`: :class:`Section` -> :class:`Table` -> rows of formatted
:class:`Cell` strings), and each renderer only draws it. All numbers are formatted
here with :mod:`profcompare.render.format`, so both outputs read alike.

Every table is cut to the top N rows; when rows were cut the table ends with one "other" row
(muted) aggregating them, and a note says what was cut.

Modules: ``document`` (the document model, and the cells and notes every section shares),
``report`` (one report and the ``variables`` command), ``comparison`` (two reports) and
``ledger`` (the ledger sections of both; with ``ledger_rows`` and ``ledger_peak``) and ``brief``
(the first screen of ``run`` and ``compare``: headline, verdict, largest moves, where to look
next). Every other module builds one section family for every medium, the HTML page included
(a report's builder and a comparison's): ``summary``, ``categories``, ``liveness``,
``verdict``, ``variables``, ``code``, ``streaming`` (with what their tables share, ``listing``),
``tiles``, ``execution``, ``ipus``, ``replicas``, ``trace``. Import the names below from this
package; :data:`SECTION_NAMES` names the sections of a comparison for ``--section``.
"""

from __future__ import annotations

from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.section_names import SECTION_NAMES
from profcompare.render.sections.comparison import comparison_document
from profcompare.render.sections.header import comparison_warnings
from profcompare.render.sections.document import (
    TONES,
    Cell,
    Column,
    Document,
    Section,
    Table,
    VariablesView,
    limit,
)
from profcompare.render.sections.report import report_document, variables_document
from profcompare.render.sections.summary import CONFIDENCE_LEGEND as CONFIDENCE_LEGEND
from profcompare.render.sections.variables import comparison_variables_view, matched_changes_first


def build_document(obj: Report | Comparison | VariablesView, *, top: int | None = 20) -> Document:
    """Return the :class:`Document` for a Report, a Comparison or a VariablesView."""
    if isinstance(obj, Comparison):
        return comparison_document(obj, top=top)
    if isinstance(obj, Report):
        return report_document(obj, top=top)
    if isinstance(obj, VariablesView):
        return variables_document(obj)
    raise TypeError(f"cannot render a {type(obj).__name__}; expected a Report, Comparison or VariablesView")


__all__ = [
    "SECTION_NAMES",
    "TONES",
    "Cell",
    "Column",
    "Document",
    "Section",
    "Table",
    "VariablesView",
    "build_document",
    "comparison_document",
    "comparison_variables_view",
    "comparison_warnings",
    "limit",
    "matched_changes_first",
    "report_document",
    "variables_document",
]
