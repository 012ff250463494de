"""The verdict in words: the two or three sentences every comparison opens with (terminal,
markdown, HTML, a run's index and a sweep), written from the facts of
:mod:`profcompare.comparison.verdict` and nothing else, so they change exactly when the figures do.

Figures are formatted with :mod:`profcompare.render.format`, as in the tables under them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from profcompare.comparison import Comparison
from profcompare.comparison.verdict import (Change, ComparisonVerdict, Fit, NWayVerdict, RoleMove, TimeCause,
                                            VariantVerdict, comparison_verdict)
from profcompare.model import LOCATIONS
from profcompare.render.format import format_bytes, format_metric, format_pct, format_rate, format_seconds
from profcompare.render.ledger_words import location_text

#: A change smaller than this many percent reads "barely moved" whatever its status.
BARELY_PCT = 1.0

#: What each metric is called inside a sentence.
_WHAT = {
    "not_always_live_peak_bytes": "the not-always-live peak",
    "always_live_bytes": "always-live memory",
    "peak_liveness_bytes": "peak liveness",
    "max_tile_bytes": "the fullest tile",
    "seconds_per_step": "time per session.run",
    "cycles_per_step": "device cycles per step",
    "host_seconds_per_step": "host/runtime time per step",
}


def _fmt(metric: str) -> Callable[[Any], str]:
    return lambda value: format_metric(metric, value)


def move_words(move: RoleMove) -> str:
    """One role's move: "optimizer_state 8.3 MiB not-always-live -> 1.3 MiB Streaming Memory
    (replica-sharded)" (the share of Streaming Memory in replica-sharded buffers when known)."""

    def side(values: Any, sharded: int) -> str:
        parts = []
        for loc in LOCATIONS:
            if not values[loc]:
                continue
            text = location_text(loc, values[loc])
            if loc == "streaming_memory" and sharded:
                share = 100.0 * sharded / values[loc]
                text += " (replica-sharded)" if share >= 99.5 else f" ({share:.0f}% replica-sharded)"
            parts.append(text)
        return " + ".join(parts) if parts else "nothing"

    return f"{move.role} {side(move.base, move.sharded[0])} -> {side(move.new, move.sharded[1])}"


def change_words(change: Change, what: str | None = None) -> str:
    """A summary metric's change in words: "the not-always-live peak fell 32.0% (16.7 MiB ->
    11.3 MiB)", "peak liveness barely moved (+0.2%, 55.1 MiB -> 55.2 MiB)", "... is unchanged at
    213.8 KiB"."""
    what = what or _WHAT.get(change.metric, change.metric)
    fmt = _fmt(change.metric)
    if not change.known:
        return f"{what} is not known"
    both = f"{fmt(change.base)} -> {fmt(change.new)}"
    if change.status == "unchanged" or change.delta == 0:
        return f"{what} is unchanged at {fmt(change.new)}" if change.delta == 0 else \
            f"{what} is unchanged within noise ({both})"
    verb = "rose" if change.delta > 0 else "fell"
    if math.isnan(change.delta_pct):
        return f"{what} {verb} from {fmt(change.base)} to {fmt(change.new)}"
    if abs(change.delta_pct) < BARELY_PCT:
        return f"{what} barely moved ({format_pct(change.delta_pct)}, {both})"
    return f"{what} {verb} {abs(change.delta_pct):.1f}% ({both})"


def _samples_words(change: Change) -> str:
    if not change.known:
        return "samples per second are not known"
    both = f"{format_rate(change.base)} -> {format_rate(change.new)}"
    if change.status == "unchanged" or math.isnan(change.delta_pct) or change.delta == 0:
        return f"samples per second are unchanged ({both})" if change.status == "unchanged" else \
            f"samples per second went from {both}"
    more = "more" if change.delta > 0 else "fewer"
    return f"{abs(change.delta_pct):.1f}% {more} samples per second ({both})"


def _fit_words(base: Fit, new: Fit) -> str:
    def over(fit: Fit) -> str:
        if fit.tiles_over_budget > 0:
            count = int(fit.tiles_over_budget)
            return (f"{count:,} tile{'s' if count != 1 else ''} over the {format_bytes(fit.bytes_per_tile)} budget, "
                    f"fullest {format_bytes(fit.max_tile_bytes)}")
        return "flagged out of memory"

    if base.fits and new.fits:
        budget = format_bytes(new.bytes_per_tile)
        return f"both fit (no tile over its {budget} budget)"
    if not base.fits and not new.fits:
        return f"neither fits: {base.label} has {over(base)}; {new.label} has {over(new)}"
    bad, good = (base, new) if not base.fits else (new, base)
    return f"{bad.label} does NOT fit ({over(bad)}); {good.label} fits"


def _always_live_words(always: Change, code: Change) -> str:
    """The always-live term of peak liveness, with the change of code when both moved: "always-live
    memory rose 14.2% (38.4 MiB -> 43.9 MiB; code +3.7 MiB)"."""
    words = change_words(always)
    if always.known and always.delta != 0 and code.known and code.delta != 0 and words.endswith(")"):
        words = f"{words[:-1]}; code {format_metric(code.metric, code.delta, signed=True)})"
    return words


def _device_ms(change: Change, clock_hz: tuple[float, float]) -> tuple[float, float]:
    return change.base / clock_hz[0], change.new / clock_hz[1]


#: How many parameters a time cause names before "and N more".
_CAUSE_PARAMETERS_NAMED = 2


def cause_words(cause: TimeCause, clock_hz: float) -> str:
    """One cause of a device-time change: "optimizer_state remote load/store of fc1.weight,
    fc2.weight and 6 more +2.120 ms (all exposed)" -- "all exposed", "all overlapped" or the
    exposed part in milliseconds."""
    what = f"{cause.role} {cause.kind}" if cause.role else cause.kind
    names = list(cause.parameters[:_CAUSE_PARAMETERS_NAMED])
    if names:
        more = len(cause.parameters) - len(names)
        what += " of " + ", ".join(names) + (f" and {more} more" if more else "")
    if math.isclose(cause.exposed_cycles, cause.delta_cycles, rel_tol=1e-3):
        exposed = "all exposed"
    elif math.isclose(cause.exposed_cycles, 0.0, abs_tol=1e-3 * abs(cause.delta_cycles)):
        exposed = "all overlapped"
    else:
        exposed = f"{format_seconds(cause.exposed_cycles / clock_hz)} exposed"
    return f"{what} {format_seconds(cause.delta_cycles / clock_hz, signed=True)} ({exposed})"


def comparison_sentences(verdict: ComparisonVerdict) -> tuple[str, ...]:
    """The verdict of one comparison in three sentences: what moved where (the largest moves by
    role, bytes per replica), what it did to peak tile memory and whether each side fits, and
    what it did to time (time per session.run as device + host/runtime time, the device change's
    largest causes from the time diff, samples per second)."""
    head = f"{verdict.new_label} against {verdict.base_label}"
    if not verdict.moves:
        first = f"{head}: no parameter's bytes moved between tile memory and Streaming Memory."
    elif len(verdict.moves) == 1:
        first = f"{head}: the largest move is {move_words(verdict.moves[0])} (bytes per replica)."
    else:
        named = [move_words(m) for m in verdict.moves]
        first = f"{head}: the largest moves are {'; '.join(named[:-1])} and {named[-1]} (bytes per replica)."
    peak, always, code, liveness, tile = (verdict.change(m) for m in ("not_always_live_peak_bytes", "always_live_bytes",
                                                                        "code_bytes", "peak_liveness_bytes",
                                                                        "max_tile_bytes"))
    memory = (f"Tile memory: {change_words(peak)} and {_always_live_words(always, code)}, so {change_words(liveness)} "
              f"and {change_words(tile)}; {_fit_words(verdict.base_fit, verdict.new_fit)}.")
    seconds, samples, cycles, host = (verdict.change(m) for m in ("seconds_per_step", "samples_per_second",
                                                                    "cycles_per_step", "host_seconds_per_step"))
    if not seconds.known:
        time = "Time: not known (an execution profile is missing on at least one side)."
    else:
        device_base, device_new = _device_ms(cycles, verdict.clock_hz)
        device = f"device {format_seconds(device_base)} -> {format_seconds(device_new)}"
        if verdict.time_causes and cycles.known and cycles.delta:
            causes = ", ".join(cause_words(c, verdict.clock_hz[1]) for c in verdict.time_causes)
            device += f" ({format_seconds(device_new - device_base, signed=True)}, largest causes: {causes})"
        parts = [device]
        if host.known:
            parts.append("host/runtime " + (f"unchanged at {format_seconds(host.new)}" if host.delta == 0 else
                                            f"{format_seconds(host.base)} -> {format_seconds(host.new)}"))
        time = f"{change_words(seconds)}, of which {' and '.join(parts)}; {_samples_words(samples)}."
    return first, memory, time[0].upper() + time[1:]


def _ratio(value: float) -> str:
    """A ratio of times: two decimals below 2 ("1.15x"), one from 2 on ("2.3x")."""
    return f"{value:.2f}x" if value < 2 else f"{value:.1f}x"


def _peak_words(change: Change) -> str:
    """Peak liveness in a headline: "same peak liveness", "same peak liveness (+0.4%)" (within
    :data:`BARELY_PCT` or the noise rule), "32.0% less peak liveness", "peak liveness 0 B -> 5.0 MiB"."""
    if not change.known:
        return "peak liveness not known"
    if change.delta == 0:
        return "same peak liveness"
    if math.isnan(change.delta_pct):
        return f"peak liveness {format_bytes(change.base)} -> {format_bytes(change.new)}"
    if change.status == "unchanged" or abs(change.delta_pct) < BARELY_PCT:
        return f"same peak liveness ({format_pct(change.delta_pct)})"
    return f"{abs(change.delta_pct):.1f}% {'more' if change.delta > 0 else 'less'} peak liveness"


def _speed_words(change: Change) -> str:
    """Time per session.run in a headline, as a ratio of the two times: "2.3x slower", "1.15x
    faster", "same speed (+0.3%)" (within :data:`BARELY_PCT` or the noise rule)."""
    if not change.known:
        return "time not known"
    if change.delta == 0:
        return "same speed"
    if change.base <= 0 or change.new <= 0:
        return f"time per session.run {format_seconds(change.base)} -> {format_seconds(change.new)}"
    if change.status == "unchanged" or abs(change.delta_pct) < BARELY_PCT:
        return f"same speed ({format_pct(change.delta_pct)})"
    if change.delta > 0:
        return f"{_ratio(change.new / change.base)} slower"
    return f"{_ratio(change.base / change.new)} faster"


def _fit_clause(base: Fit, new: Fit) -> str:
    if base.fits and new.fits:
        return "both fit"
    if not base.fits and not new.fits:
        return "neither fits"
    bad, good = (base, new) if not base.fits else (new, base)
    return f"{good.label} fits, {bad.label} does NOT"


def headline(verdict: ComparisonVerdict) -> str:
    """The comparison in one sentence, from its own figures: the change of peak liveness, time
    per session.run as a ratio and whether each side fits in tile memory, e.g.
    "offchip-sharded vs onchip: same peak liveness (+0.4%), 2.3x slower; both fit". The
    terminal opens and closes with it; every output can show it above the verdict."""
    memory = _peak_words(verdict.change("peak_liveness_bytes"))
    speed = _speed_words(verdict.change("seconds_per_step"))
    return (f"{verdict.new_label} vs {verdict.base_label}: {memory}, {speed}; "
            f"{_fit_clause(verdict.base_fit, verdict.new_fit)}")


def comparison_headline(cmp: Comparison) -> str:
    """Return the headline of a comparison (:func:`headline` of its verdict): the one sentence the
    terminal opens and closes with and every other output (Markdown, HTML, JSON, notebook) shows
    under its title."""
    return headline(comparison_verdict(cmp))


def nway_headline(verdict: NWayVerdict, base_status: str = "ok") -> str:
    """A run of several variants in one sentence, from the N-way figures: how many fit in tile
    memory (and which do not), which failed, which has the least peak liveness against the base
    and which is fastest, e.g. "3 variants against onchip: all 3 fit; least peak liveness
    onchip-sharded (-2.1%); fastest onchip (the base)". ``base_status`` is the base variant's
    run status (ok | oom | failed): a failed base leaves nothing compared."""
    count = len(verdict.variants) + 1
    if base_status == "failed":
        return f"{verdict.base} (the base) failed: nothing compared"
    failed = [v.label for v in verdict.variants if v.status == "failed"]
    if count == 1:
        fit = ("fits" if verdict.fitting else "does NOT fit" if verdict.not_fitting else "fit not known")
        return f"{verdict.base}: the only variant, nothing compared; {fit}"
    with_report = len(verdict.fitting) + len(verdict.not_fitting)
    if not verdict.not_fitting:
        fit = f"all {with_report} fit" if with_report == count else f"{with_report} of {count} fit"
    elif not verdict.fitting:
        fit = "none fits"
    else:
        fit = f"{len(verdict.fitting)} of {count} fit ({', '.join(verdict.not_fitting)} do NOT)"
    if failed:
        fit += f", {', '.join(failed)} failed"
    parts = [fit]
    peaks = [(v.label, v.memory) for v in verdict.variants if v.status != "failed"]
    changes = [(label, c) for label, memory in peaks for c in memory
               if c.metric == "peak_liveness_bytes" and c.known and not math.isnan(c.delta_pct)]
    if changes:
        label, least = min(changes, key=lambda item: (item[1].delta_pct, item[0]))
        if least.delta_pct <= -BARELY_PCT:
            parts.append(f"least peak liveness {label} ({format_pct(least.delta_pct)})")
        elif all(abs(c.delta_pct) < BARELY_PCT for _, c in changes):
            parts.append(f"same peak liveness (within {BARELY_PCT:g}%)")
        else:
            parts.append(f"least peak liveness {verdict.base} (the base)")
    if verdict.fastest is not None:
        parts.append(f"fastest {verdict.fastest}" + (" (the base)" if verdict.fastest == verdict.base else ""))
    return f"{count} variants against {verdict.base}: " + "; ".join(parts)


def _pct(change: Change, words: str) -> str:
    if not change.known:
        return f"{words} n/a"
    if math.isnan(change.delta_pct):
        return f"{words} {format_metric(change.metric, change.base)} -> {format_metric(change.metric, change.new)}"
    return f"{words} {format_pct(change.delta_pct)}"


def variant_sentence(variant: VariantVerdict, base: str) -> str:
    """One variant against the base in one sentence."""
    if variant.status == "failed":
        return f"{variant.label}: failed, no report to compare with {base}."
    changes = {c.metric: c for c in (*variant.memory, *variant.time)}
    parts = [
        _pct(changes["not_always_live_peak_bytes"], "not-always-live peak"),
        _pct(changes["always_live_bytes"], "always-live"),
        _pct(changes["peak_liveness_bytes"], "peak liveness"),
        _pct(changes["max_tile_bytes"], "fullest tile"),
        _pct(changes["seconds_per_step"], "time per session.run"),
        _pct(changes["samples_per_second"], "samples per second"),
    ]
    fits = {True: "fits", False: "does NOT fit in tile memory", None: "fit not known"}[variant.fits]
    move = f"; largest move: {move_words(variant.move)}" if variant.move is not None else ""
    return f"{variant.label} against {base}: {', '.join(parts)}{move}; {fits}."


def nway_sentences(verdict: NWayVerdict) -> tuple[str, ...]:
    """The verdict of N variants: each against the base in one sentence, then which fit in tile
    memory and which is fastest."""
    lines = [variant_sentence(v, verdict.base) for v in verdict.variants]
    if verdict.not_fitting:
        fit = f"Fit in tile memory: {', '.join(verdict.fitting) or 'none'}; over budget: {', '.join(verdict.not_fitting)}."
    else:
        fit = f"All {len(verdict.fitting)} variants with a report fit in tile memory." if verdict.fitting else \
            "No variant has tile figures."
    if verdict.fastest is not None:
        fit += f" Fastest: {verdict.fastest} ({format_rate(verdict.fastest_samples_per_second)} samples per second)."
    lines.append(fit)
    return tuple(lines)


__all__ = ["BARELY_PCT", "change_words", "comparison_headline", "comparison_sentences", "headline", "move_words", "nway_headline",
           "nway_sentences", "variant_sentence"]
