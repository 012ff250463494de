"""The verdict: facts read from the comparison's figures, sentences that change when they do."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from profcompare.comparison import Comparison
from profcompare.comparison.verdict import comparison_verdict, nway_verdict, role_moves
from profcompare.analysis.nway import nway_table
from profcompare.render.sections import comparison_document
from profcompare.render.verdict_words import comparison_sentences, nway_sentences


def _with(cmp: Comparison, **changes: tuple[float, float, str]) -> Comparison:
    """``cmp`` with some summary rows replaced: metric=(base, new, status)."""
    summary = cmp.summary.copy()
    for metric, (base, new, status) in changes.items():
        summary.loc[metric, ["base", "new", "delta"]] = [base, new, new - base]
        summary.loc[metric, "delta_pct"] = 100.0 * (new - base) / base if base else float("nan")
        summary.loc[metric, "status"] = status
    return dataclasses.replace(cmp, summary=summary)


def test_sample_verdict_pins_its_figures(comparison: Comparison) -> None:
    first, memory, time = comparison_sentences(comparison_verdict(comparison))
    # ledger of the samples: optimizer_state 5,584,896 B always-live (5.3 MiB) -> 1,396,224 B Streaming
    # Memory (1.3 MiB), all eight buffers replica-sharded; remote_staging nothing -> 1,396,224 B not-always-live
    assert first == ("offchip-sharded against onchip: the largest moves are optimizer_state 5.3 MiB always-live -> "
                     "1.3 MiB Streaming Memory (replica-sharded) and remote_staging nothing -> 1.3 MiB not-always-live "
                     "(bytes per replica).")
    # summary: peak 219,472 -> 2,487,040 B (+2,267,568 / 219,472 = +1033.2%); liveness 23,024,748 ->
    # 20,877,420 B (-9.3%), so always-live 23,024,748 - 219,472 = 22,805,276 B (21.7 MiB) -> 20,877,420 -
    # 2,487,040 = 18,390,380 B (17.5 MiB), -4,414,896 / 22,805,276 = -19.4%; code 7,080,000 -> 8,250,000 B
    # (+1,170,000 B = +1.1 MiB); max tile 105,739 -> 54,280 B (-48.7%); no tile over 638,976 B
    assert memory == ("Tile memory: the not-always-live peak rose 1033.2% (214.3 KiB -> 2.4 MiB) and always-live "
                      "memory fell 19.4% (21.7 MiB -> 17.5 MiB; code +1.1 MiB), so peak liveness fell 9.3% "
                      "(22.0 MiB -> 19.9 MiB) and the fullest tile fell 48.7% (103.3 KiB -> 53.0 KiB); both fit "
                      "(no tile over its 624.0 KiB budget).")
    # 840,250 -> 905,300 device cycles at 1.33 GHz = 0.632 -> 0.681 ms; the samples record no host time
    # the time diff: the samples' steps all belong to one op ('main') holding a collective step, so the
    # whole change (+65,050 cycles) is charged to the kind collective
    assert time == ("Time per session.run rose 7.7% (0.632 ms -> 0.681 ms), of which device 0.632 ms -> 0.681 ms "
                    "(+0.049 ms, largest causes: collective +0.049 ms (all exposed)); "
                    "7.2% fewer samples per second (405,212.7 -> 376,096.3).")


def test_the_sentences_follow_the_figures(comparison: Comparison) -> None:
    peak_base = float(comparison.summary.loc["not_always_live_peak_bytes", "base"])
    changed = _with(comparison, not_always_live_peak_bytes=(peak_base, peak_base * 0.5, "shrank"),
                    samples_per_second=(1000.0, 1250.0, "grew"), tiles_over_budget=(0.0, 3.0, "grew"),
                    max_tile_bytes=(105_800.0, 700_000.0, "grew"))
    _, memory, time = comparison_sentences(comparison_verdict(changed))
    # 219,472 B = 214.3 KiB; half is 109,736 B = 107.2 KiB; 700,000 B = 683.6 KiB
    assert "the not-always-live peak fell 50.0% (214.3 KiB -> 107.2 KiB)" in memory
    assert memory.endswith("offchip-sharded does NOT fit (3 tiles over the 624.0 KiB budget, fullest 683.6 KiB); "
                           "onchip fits.")
    assert time.endswith("25.0% more samples per second (1,000.0 -> 1,250.0).")
    still = _with(comparison, peak_liveness_bytes=(1_000_000.0, 1_000_000.0, "unchanged"))
    assert "peak liveness is unchanged at 976.6 KiB" in comparison_sentences(comparison_verdict(still))[1]
    # always-live unchanged: the code change is not named (it did not move peak liveness)
    same = _with(comparison, always_live_bytes=(2_097_152.0, 2_097_152.0, "unchanged"))
    memory = comparison_sentences(comparison_verdict(same))[1]
    assert "and always-live memory is unchanged at 2.0 MiB, so peak liveness fell 9.3%" in memory
    assert "code" not in memory


def test_the_verdict_names_both_terms_of_peak_liveness(comparison: Comparison) -> None:
    # the not-always-live peak halves while always-live grows by as much: peak liveness stays, and the
    # sentence says why (always-live 1,000,000 -> 1,109,736 B = +11.0%, code 500,000 -> 609,736 B = +107.2 KiB)
    changed = _with(comparison, not_always_live_peak_bytes=(219_472.0, 109_736.0, "shrank"),
                    always_live_bytes=(1_000_000.0, 1_109_736.0, "grew"), code_bytes=(500_000.0, 609_736.0, "grew"),
                    peak_liveness_bytes=(1_219_472.0, 1_219_472.0, "unchanged"))
    memory = comparison_sentences(comparison_verdict(changed))[1]
    assert memory.startswith("Tile memory: the not-always-live peak fell 50.0% (214.3 KiB -> 107.2 KiB) and always-live "
                             "memory rose 11.0% (976.6 KiB -> 1.1 MiB; code +107.2 KiB), so peak liveness is unchanged "
                             "at 1.2 MiB and ")


def test_the_share_of_replica_sharded_streaming_memory_is_said(comparison: Comparison) -> None:
    verdict = comparison_verdict(comparison)
    move = dataclasses.replace(verdict.moves[0], sharded=(0, 1_396_224 // 4))
    half = dataclasses.replace(verdict, moves=(move,))
    # a quarter of the 1,396,224 B in sharded buffers
    assert "-> 1.3 MiB Streaming Memory (25% replica-sharded) (bytes per replica)." in comparison_sentences(half)[0]
    unsharded = dataclasses.replace(verdict, moves=(dataclasses.replace(move, sharded=(0, 0)),))
    assert "-> 1.3 MiB Streaming Memory (bytes per replica)." in comparison_sentences(unsharded)[0]


def test_role_moves_sum_parameters_per_role_and_location() -> None:
    ledger = pd.DataFrame({
        "parameter": ["a", "a", "b", "b", "c"],
        "role": ["optimizer_state", "optimizer_state", "optimizer_state", "optimizer_state", "weight"],
        "location": ["always_live", "streaming_memory", "always_live", "streaming_memory", "always_live"],
        "base_bytes": [400, 0, 600, 0, 50], "new_bytes": [0, 100, 0, 150, 50], "delta_bytes": [-400, 100, -600, 150, 0],
    })
    (move,) = role_moves(ledger)  # weight did not move
    assert (move.role, move.moved_bytes, move.parameters) == ("optimizer_state", 400 + 100 + 600 + 150, 2)
    assert move.base == {"always_live": 1000, "not_always_live": 0, "streaming_memory": 0}
    assert move.new == {"always_live": 0, "not_always_live": 0, "streaming_memory": 250}


def test_every_comparison_document_opens_with_the_verdict(comparison: Comparison) -> None:
    document = comparison_document(comparison)
    assert document.sections[0].title == "Verdict"
    assert document.sections[0].lines == comparison_sentences(comparison_verdict(comparison))


def test_a_document_of_some_sections_holds_those_sections_of_the_full_one(comparison: Comparison) -> None:
    full = comparison_document(comparison, top=10)
    wanted = ("summary", "verdict", "variables", "no such section")
    some = comparison_document(comparison, top=10, names=wanted)
    assert [s.title for s in some.sections] == ["Verdict", "Summary", "Variables"]  # the full order
    assert some.sections == tuple(s for s in full.sections if s.title in ("Verdict", "Summary", "Variables"))
    assert (some.title, some.facts, some.warnings) == (full.title, full.facts, full.warnings)


def test_nway_verdict_names_each_variant_what_fits_and_the_fastest(onchip, offchip) -> None:  # type: ignore[no-untyped-def]
    table = nway_table([("onchip", onchip), ("offchip-sharded", offchip), ("broken", None)],
                       statuses={"broken": "failed"})
    lines = nway_sentences(nway_verdict(table))
    # peak 219,472 -> 2,487,040 B = +1033.2%; 0.632 -> 0.681 ms = +7.7%; samples -7.2%
    # always-live 22,805,276 -> 18,390,380 B = -19.4%
    assert lines[0].startswith("offchip-sharded against onchip: not-always-live peak +1033.2%, always-live -19.4%, "
                               "peak liveness -9.3%, "
                               "fullest tile -48.7%, time per session.run +7.7%, samples per second -7.2%; largest move: "
                               "optimizer_state 5.3 MiB always-live -> 1.3 MiB Streaming Memory; fits.")
    assert lines[1] == "broken: failed, no report to compare with onchip."
    assert lines[2] == "All 2 variants with a report fit in tile memory. Fastest: onchip (405,212.7 samples per second)."


@pytest.mark.parametrize("status", ["oom"])
def test_nway_verdict_says_which_does_not_fit(onchip, offchip, status: str) -> None:  # type: ignore[no-untyped-def]
    table = nway_table([("onchip", onchip), ("offchip-sharded", offchip)], statuses={"offchip-sharded": status})
    lines = nway_sentences(nway_verdict(table))
    assert lines[0].endswith("; does NOT fit in tile memory.")
    assert lines[-1].startswith("Fit in tile memory: onchip; over budget: offchip-sharded.")


def test_each_section_name_builds_its_section_and_the_names_follow_the_document_order(
        comparison: Comparison) -> None:
    from profcompare.render.section_names import SECTION_NAMES

    full = [s.title for s in comparison_document(comparison, top=10).sections]
    # the sample has no trace, no program tree, no vertices, one IPU per replica and no replica
    # groupings
    absent = ("trace", "programs", "vertices", "ipus", "replicas")
    assert full == [title for name, title in SECTION_NAMES.items() if name not in absent]
    for name, title in SECTION_NAMES.items():
        titles = [s.title for s in comparison_document(comparison, top=10, names={name}).sections]
        assert titles == ([] if name in absent else [title]), name
