"""The first screen of ``run`` and ``compare`` as a document: the headline (one sentence from
the comparison's own figures, :func:`profcompare.render.verdict_words.headline`) as its title,
the warnings a reader must not miss, the verdict, the ledger's largest moves, any sections the
command adds (the variants of a run) and where to look next. :mod:`profcompare.render.screen`
draws it to fit one terminal screen and closes it with the headline again."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from profcompare.comparison import Comparison
from profcompare.comparison.verdict import NWayVerdict, comparison_verdict
from profcompare.render.ledger_words import MOVES_SHOWN
from profcompare.render.sections.header import comparison_warnings
from profcompare.render.sections.document import Document, Section
from profcompare.render.sections.ledger import comparison_moves_section
from profcompare.render.sections.verdict import comparison_verdict_section
from profcompare.render.verdict_words import headline, nway_headline, nway_sentences

#: the title of the section saying where to look next
NEXT_TITLE = "Next"


def comparison_brief(cmp: Comparison, *, moves: int = MOVES_SHOWN, sections: Sequence[Section] = (),
                     next_steps: Sequence[str] = (), causes: int | None = None) -> Document:
    """Return the first screen of a comparison as a Document: titled by its headline, with the
    comparison's warnings, the verdict (its time sentence naming the ``causes`` largest causes
    of the device-time change; None: as many as the verdict names), the ``moves`` largest ledger
    moves ("Where the memory moved"), ``sections`` and the ``next_steps`` lines under
    :data:`NEXT_TITLE`."""
    verdict = comparison_verdict(cmp)
    if causes is not None:
        verdict = dataclasses.replace(verdict, time_causes=verdict.time_causes[:causes])
    parts = [comparison_verdict_section(cmp, verdict, first_screen=True), comparison_moves_section(cmp, moves, op_name=False),
             *sections]
    if next_steps:
        parts.append(Section(NEXT_TITLE, notes=(), items=tuple(next_steps)))
    return Document(headline(verdict), (), comparison_warnings(cmp), tuple(parts))


def nway_brief(verdict: NWayVerdict, *, base_status: str = "ok", sections: Sequence[Section] = (),
               next_steps: Sequence[str] = ()) -> Document:
    """Return the first screen of a run of several variants as a Document: titled by its
    headline, with the N-way verdict (each variant against the base, which fit, which is
    fastest), ``sections`` and the ``next_steps`` lines under :data:`NEXT_TITLE`; ``base_status``
    is the base variant's run status (see :func:`~profcompare.render.verdict_words.nway_headline`)."""
    parts = [Section("Verdict", notes=(), items=nway_sentences(verdict)), *sections]
    if next_steps:
        parts.append(Section(NEXT_TITLE, notes=(), items=tuple(next_steps)))
    return Document(nway_headline(verdict, base_status), (), (), tuple(parts))


__all__ = ["NEXT_TITLE", "comparison_brief", "nway_brief"]
