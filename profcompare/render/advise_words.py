"""The advise verdict in words: which layout is fastest among those that fit, how far the next
one is behind, what does not fit, the memory-lean end of the front, and what was searched --
written from the facts of :func:`profcompare.analysis.advise_results.advise_verdict` and nothing else.

Sentences are plain text (layout knobs come from the user and the workload): every output
escapes them as it escapes any name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from profcompare.analysis.advise_results import AdviseVerdict, AskedLayout, PointFact
from profcompare.backend.knobs import layout_text
from profcompare.render.format import format_bytes, format_rate

#: how the search methods are named in the closing sentence
METHOD_WORDS = {"exhaustive": "Searched every valid layout", "nsga2": "Searched by NSGA-II (Optuna)"}


def _layout(point: PointFact, headline: Sequence[str]) -> str:
    return layout_text(point.knobs, headline)


def _tile(point: PointFact) -> str:
    return f"fullest tile {format_bytes(point.max_tile_bytes)} of {format_bytes(point.bytes_per_tile)}"


def _slower(point: PointFact, than: PointFact) -> str:
    if not (than.samples_per_second > 0 and math.isfinite(point.samples_per_second)):
        return "n/a"
    pct = 100.0 * (1.0 - point.samples_per_second / than.samples_per_second)
    return "as fast" if abs(pct) < 0.05 else f"{pct:.1f}% slower"


def advise_sentences(verdict: AdviseVerdict, headline: Sequence[str] = ()) -> tuple[str, ...]:
    """The verdict: the fastest fitting layout and the next one, the fastest overall when it does
    not fit, the fitting layout with the least tile memory and the size of the front, and what the
    search covered (points run, reused, pruned per reason)."""
    lines = []
    best = verdict.fastest
    if best is None:
        text = ("No layout fits: every evaluated layout has tiles over budget, failed or needs more Streaming "
                "Memory than the machine has")
        close = verdict.closest
        if close is not None:
            over = int(close.tiles_over_budget) if math.isfinite(close.tiles_over_budget) else 0
            text += (f"; the closest, {_layout(close, headline)}, has its {_tile(close)}"
                     + (f" ({over:,} tile{'s' if over != 1 else ''} over budget)" if over else "")
                     + (f": {close.reason}" if close.reason and not over else ""))
        lines.append(text + ".")
    else:
        first = (f"{_layout(best, headline)} is the fastest layout that fits: "
                 f"{format_rate(best.samples_per_second)} samples per second, {_tile(best)}")
        if verdict.runner_up is not None:
            second = verdict.runner_up
            first += (f"; the next fitting layout, {_layout(second, headline)}, is {_slower(second, best)} "
                      f"({format_rate(second.samples_per_second)} samples per second, {_tile(second)})")
        lines.append(first + ".")
    overall = verdict.fastest_overall
    if overall is not None:
        why = overall.reason or "does not fit"
        lines.append(f"The fastest layout of all, {_layout(overall, headline)} "
                     f"({format_rate(overall.samples_per_second)} samples per second), does NOT fit: {why} "
                     f"({_tile(overall)}).")
    if verdict.smallest is not None and best is not None and verdict.smallest.label != best.label:
        small = verdict.smallest
        lines.append(f"The fitting layout with the least memory on its fullest tile is {_layout(small, headline)} "
                     f"({_tile(small)}, {format_rate(small.samples_per_second)} samples per second, "
                     f"{_slower(small, best)} than the fastest).")
    if verdict.front:
        count = len(verdict.front)
        lines.append(f"{count} layout{'s are' if count != 1 else ' is'} on the Pareto front of samples per second "
                     "against the fullest tile.")
    for asked in verdict.asked:
        lines.append(asked_sentence(asked, best, headline))
    pruned = sum(verdict.pruned.values())
    covered = METHOD_WORDS.get(verdict.method, f"Searched by {verdict.method}")
    text = (f"{covered} on {verdict.ipus} IPU{'s' if verdict.ipus != 1 else ''} with global batch "
            f"{verdict.global_batch}: {verdict.evaluated} of {verdict.valid_points} valid layouts evaluated "
            f"({verdict.new} run now, {verdict.cached} reused from earlier advise runs), {verdict.fitting} fit")
    if pruned:
        reasons = "; ".join(f"{reason}: {count}" for reason, count in verdict.pruned.items())
        text += f"; {pruned} combination{'s' if pruned != 1 else ''} pruned before running ({reasons})"
    lines.append(text + ". Compile only: memory and time modelled.")
    return tuple(lines)


def asked_sentence(asked: AskedLayout, fastest: PointFact | None, headline: Sequence[str] = ()) -> str:
    """One layout the user asked about: "Layouts with variant=offchip, replicas=4: the fastest
    that fits is ... (x% slower than the fastest), on the Pareto front." """
    wanted = ", ".join(f"{k}={v}" for k, v in asked.wanted.items())
    head = f"Layouts with {wanted}"
    if not asked.matches:
        return f"{head}: none was evaluated."
    if asked.best is None:
        first = asked.first
        why = f" ({_layout(first, headline)}: {first.reason})" if first is not None and first.reason else ""
        return f"{head}: none of the {asked.matches} evaluated fits{why}."
    best = asked.best
    behind = f", {_slower(best, fastest)} than the fastest" if fastest is not None and fastest.label != best.label else \
        ", the fastest of all"
    front = "on the Pareto front" if asked.on_front else "none on the Pareto front"
    return (f"{head}: the fastest that fits is {_layout(best, headline)} ({format_rate(best.samples_per_second)} "
            f"samples per second, {_tile(best)}{behind}); {front}.")


__all__ = ["METHOD_WORDS", "advise_sentences", "asked_sentence"]
