"""JSON of ``compare --at`` (``--format json``): what is live at one step of each report, aligned.

Shape (``schema_version`` as :data:`profcompare.render.json_out.SCHEMA_VERSION`)::

    {"schema_version": int, "view": "at_step", "selector": str,
     "base": {meta}, "new": {meta},
     "headline": str (the view in one sentence, as the text opens with),
     "steps": {"base" | "new": {"step", "program", "program_type",
                                "how" (peak | step | match | aligned), "not_always_live_bytes",
                                "always_live_bytes", "total_bytes", "listed_bytes"}},
     "by_parameter": [AtStepComparison.by_parameter rows],
     "variables": [AtStepComparison.variables rows], "cut": {"variables": {"shown", "total", "cut"}},
     "peaks": {"base" | "new": [top_peaks rows: rank, step, program, not_always_live_bytes]},
     "per_ipu": [AtStepComparison.per_ipu rows: ipu, base_bytes, new_bytes, delta_bytes; [] when
                 neither liveness table is per IPU]}

Every row unless ``--top N`` limits the variables (the largest changes first).
"""

from __future__ import annotations

from typing import Any

from profcompare.comparison.at_step import AtStepComparison, StepSide
from profcompare.render.json_out import SCHEMA_VERSION
from profcompare.render.json_values import frame_records
from profcompare.render.json_text import dumps_indented
from profcompare.render.sections.at_step import at_step_headline


def _side(side: StepSide) -> dict[str, Any]:
    choice = side.choice
    return {"step": choice.step, "program": choice.program, "program_type": choice.program_type, "how": choice.how,
            "not_always_live_bytes": choice.not_always_live_bytes, "always_live_bytes": side.always_live_bytes,
            "total_bytes": side.total_bytes, "listed_bytes": side.listed_bytes}


def at_step_json(result: AtStepComparison, *, top: int | None = None) -> dict[str, Any]:
    """The JSON-ready dict of ``result`` (see the module docstring); ``top`` limits the
    variables rows (None: all)."""
    cmp = result.comparison
    variables = result.variables if top is None else result.variables.head(top)
    return {
        "schema_version": SCHEMA_VERSION,
        "view": "at_step",
        "selector": result.selector,
        "base": cmp.base.meta.to_dict(),
        "new": cmp.new.meta.to_dict(),
        "headline": at_step_headline(result),
        "steps": {"base": _side(result.base), "new": _side(result.new)},
        "by_parameter": frame_records(result.by_parameter),
        "variables": frame_records(variables),
        "cut": {"variables": {"shown": len(variables), "total": len(result.variables),
                              "cut": len(result.variables) - len(variables)}},
        "peaks": {"base": frame_records(result.base_peaks), "new": frame_records(result.new_peaks)},
        "per_ipu": frame_records(result.per_ipu),
    }


def at_step_json_text(result: AtStepComparison, *, top: int | None = None) -> str:
    """:func:`at_step_json` as indented JSON text ending with a newline."""
    return dumps_indented(at_step_json(result, top=top), ensure_ascii=False) + "\n"


__all__ = ["at_step_json", "at_step_json_text"]
