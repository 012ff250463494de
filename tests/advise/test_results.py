"""Points, fit, verdict facts and words of an advise search, from hand-made evaluated points."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from profcompare.analysis.advise_results import (
    POINT_METRICS,
    Evaluated,
    Machine,
    advise_verdict,
    fit_reason,
    fits,
    front,
    match_layout,
    point_frame,
)
from profcompare.render.advise_words import advise_sentences

BUDGET = 638_976.0  # bytes per tile of a Mk2 IPU


def _point(label, variant, replicas, rate, tile, *, status="ok", over=0.0, streaming=0.0, cached=False):
    metrics = {m: math.nan for m in POINT_METRICS}
    metrics.update({"samples_per_second": rate, "max_tile_bytes": tile, "tiles_over_budget": over,
                    "bytes_per_tile": BUDGET, "always_live_bytes": 1e6, "not_always_live_peak_bytes": 2e6,
                    "streaming_memory_bytes": streaming, "code_bytes": 5e5, "num_replicas": float(replicas)})
    return Evaluated({"variant": variant, "replicas": replicas}, label, status, None, metrics, cached)


POINTS = [
    _point("a", "onchip", 1, 1000.0, 300_000.0),
    _point("b", "onchip", 4, 3000.0, 500_000.0),
    _point("c", "offchip", 4, 2400.0, 200_000.0, cached=True),
    _point("d", "offchip", 1, 900.0, 250_000.0),
    _point("e", "onchip", 8, 5000.0, 700_000.0, status="oom", over=12.0),
]
MACHINE = Machine.of(4)


def _frame():
    return point_frame(("variant", "replicas"), POINTS, [({"variant": "onchip", "replicas": 16}, "replicas exceed --ipus")],
                       MACHINE)


def test_point_frame():
    frame = _frame()
    assert list(frame["label"]) == ["a", "b", "c", "d", "e", ""]
    assert list(frame["status"]) == ["ok", "ok", "ok", "ok", "oom", "pruned"]
    assert list(frame["fits"]) == [True, True, True, True, False, False]
    # a is dominated by c (faster, leaner); d by c too; b is the fastest fitting; c the leanest
    assert list(frame["pareto"]) == [False, True, True, False, False, False]
    assert list(frame["reason"]) == [None, None, None, None, "tiles over budget", "replicas exceed --ipus"]
    assert list(frame["run_dir"]) == ["a", "b", "c", "d", "e", None]
    assert list(front(frame)["label"]) == ["b", "c"]
    assert list(match_layout(frame, {"variant": "offchip", "replicas": "4"})["label"]) == ["c"]


def test_fit_reasons():
    ok = POINTS[0].metrics
    assert fit_reason("ok", ok, MACHINE) is None
    assert fit_reason("failed", ok, MACHINE) == "failed"
    assert fit_reason("oom", ok, MACHINE) == "tiles over budget"
    # 4 replicas x 120 GB of remote buffers = 480 GB > 4 x 112.5 GB
    assert fit_reason("ok", {**ok, "streaming_memory_bytes": 120e9, "num_replicas": 4.0}, MACHINE) == \
        "Streaming Memory over the machine's"
    assert fit_reason("ok", {**ok, "streaming_memory_bytes": 110e9, "num_replicas": 4.0}, MACHINE) is None


def test_one_tile_over_budget_does_not_fit():
    ok = POINTS[0].metrics
    assert fit_reason("ok", {**ok, "tiles_over_budget": 0.0}, MACHINE) is None
    assert fit_reason("ok", {**ok, "tiles_over_budget": 1.0}, MACHINE) == "tiles over budget"
    frame = point_frame(("variant", "replicas"), [_point("x", "onchip", 4, 9000.0, 640_000.0, over=1.0)], [], MACHINE)
    assert list(frame["fits"]) == [False] and list(frame["reason"]) == ["tiles over budget"]


def test_fits_is_true_exactly_when_there_is_no_reason():
    ok = POINTS[0].metrics
    assert fits("ok", ok, MACHINE) is True
    assert fits("oom", ok, MACHINE) is False
    assert fits("failed", ok, MACHINE) is False
    assert fits("ok", {**ok, "tiles_over_budget": 1.0}, MACHINE) is False
    assert fits("ok", {**ok, "streaming_memory_bytes": 120e9, "num_replicas": 4.0}, MACHINE) is False
    assert [fits(p.status, p.metrics, MACHINE) for p in POINTS] == list(_frame()["fits"][:len(POINTS)])


def test_among_equally_fast_layouts_the_verdict_names_the_leanest():
    heavy = _point("heavy", "onchip", 4, 3000.0, 500_000.0)
    lean = _point("lean", "offchip", 4, 3000.0, 200_000.0)
    slow = _point("slow", "offchip", 1, 1000.0, 100_000.0)
    for order in ([heavy, lean, slow], [lean, heavy, slow]):
        frame = point_frame(("variant", "replicas"), order, [], MACHINE)
        facts = advise_verdict(frame, workload="mnist", ipus=4, global_batch=256, method="exhaustive",
                               valid_points=3, pruned={}, asked=[{"replicas": "4"}])
        assert (facts.fastest.label, facts.runner_up.label, facts.smallest.label) == ("lean", "heavy", "slow")
        assert facts.asked[0].best.label == "lean"
        assert [p.label for p in facts.best_by_variant] == ["lean", "heavy"]


def test_verdict_facts_and_words():
    facts = advise_verdict(_frame(), workload="mnist", ipus=4, global_batch=256, method="exhaustive", valid_points=5,
                           pruned={"replicas exceed --ipus": 1})
    assert (facts.fastest.label, facts.runner_up.label, facts.smallest.label) == ("b", "c", "c")
    assert facts.fastest_overall.label == "e"
    assert [p.label for p in facts.front] == ["b", "c"]
    assert [p.label for p in facts.best_by_variant] == ["b", "c"]
    assert (facts.evaluated, facts.new, facts.cached, facts.fitting) == (5, 4, 1, 4)
    assert advise_sentences(facts, ("replicas",)) == (
        "onchip, replicas=4 is the fastest layout that fits: 3,000.0 samples per second, fullest tile 488.3 KiB of "
        "624.0 KiB; the next fitting layout, offchip, replicas=4, is 20.0% slower (2,400.0 samples per second, fullest "
        "tile 195.3 KiB of 624.0 KiB).",
        "The fastest layout of all, onchip, replicas=8 (5,000.0 samples per second), does NOT fit: tiles over budget "
        "(fullest tile 683.6 KiB of 624.0 KiB).",
        "The fitting layout with the least memory on its fullest tile is offchip, replicas=4 (fullest tile 195.3 KiB "
        "of 624.0 KiB, 2,400.0 samples per second, 20.0% slower than the fastest).",
        "2 layouts are on the Pareto front of samples per second against the fullest tile.",
        "Searched every valid layout on 4 IPUs with global batch 256: 5 of 5 valid layouts evaluated (4 run now, 1 "
        "reused from earlier advise runs), 4 fit; 1 combination pruned before running (replicas exceed --ipus: 1). "
        "Compile only: memory and time modelled.",
    )


def test_no_layout_fits():
    frame = point_frame(("variant", "replicas"), [POINTS[-1]], [], MACHINE)
    facts = advise_verdict(frame, workload="mnist", ipus=4, global_batch=256, method="exhaustive", valid_points=1,
                           pruned={})
    assert facts.fastest is None and facts.front == () and facts.closest.label == "e"
    assert advise_sentences(facts, ("replicas",))[0] == (
        "No layout fits: every evaluated layout has tiles over budget, failed or needs more Streaming Memory than the "
        "machine has; the closest, onchip, replicas=8, has its fullest tile 683.6 KiB of 624.0 KiB (12 tiles over "
        "budget).")
    assert isinstance(frame, pd.DataFrame)


def test_layouts_the_user_asked_about():
    from profcompare.render.advise_words import asked_sentence

    facts = advise_verdict(_frame(), workload="mnist", ipus=4, global_batch=256, method="exhaustive", valid_points=5,
                           pruned={}, asked=[{"variant": "offchip"}, {"replicas": "8"}, {"replicas": "2"},
                                             {"variant": "onchip", "replicas": "1"}])
    offchip, eight, two, small = facts.asked
    assert (offchip.matches, offchip.best.label, offchip.on_front) == (2, "c", True)
    assert (eight.matches, eight.best, eight.on_front, eight.first.label) == (1, None, False, "e")
    assert (two.matches, small.best.label, small.on_front) == (0, "a", False)
    assert [asked_sentence(a, facts.fastest) for a in facts.asked] == [
        "Layouts with variant=offchip: the fastest that fits is offchip, replicas=4 (2,400.0 samples per second, "
        "fullest tile 195.3 KiB of 624.0 KiB, 20.0% slower than the fastest); on the Pareto front.",
        "Layouts with replicas=8: none of the 1 evaluated fits (onchip, replicas=8: tiles over budget).",
        "Layouts with replicas=2: none was evaluated.",
        "Layouts with variant=onchip, replicas=1: the fastest that fits is onchip, replicas=1 (1,000.0 samples per "
        "second, fullest tile 293.0 KiB of 624.0 KiB, 66.7% slower than the fastest); none on the Pareto front.",
    ]


def test_streaming_memory_is_counted_per_replica_up_to_the_machine_s():
    ok = POINTS[0].metrics
    # 4 replicas x 112.5 GB is exactly the 4-IPU machine's 450 GB: it fits
    assert fit_reason("ok", {**ok, "streaming_memory_bytes": 112.5e9, "num_replicas": 4.0}, MACHINE) is None
    # one replica (given or not) with 300 GB fits; two do not
    assert fit_reason("ok", {**ok, "streaming_memory_bytes": 300e9, "num_replicas": 1.0}, MACHINE) is None
    no_replicas = {k: v for k, v in ok.items() if k != "num_replicas"}
    assert fit_reason("ok", {**no_replicas, "streaming_memory_bytes": 300e9}, MACHINE) is None
    assert fit_reason("ok", {**ok, "streaming_memory_bytes": 300e9, "num_replicas": 2.0}, MACHINE) == \
        "Streaming Memory over the machine's"


def test_a_failed_point_gives_its_error_and_pruned_points_are_not_cached():
    failed = Evaluated({"variant": "onchip", "replicas": 2}, "f", "failed", "ValueError: boom",
                       {m: math.nan for m in POINT_METRICS})
    assert failed.cached is False
    frame = point_frame(("variant", "replicas"), [POINTS[0], failed], [({"variant": "onchip", "replicas": 16}, "why")],
                        MACHINE)
    assert list(frame["reason"]) == [None, "failed: ValueError: boom", "why"]
    assert list(frame["cached"]) == [False, False, False]
    assert list(frame["status"]) == ["ok", "failed", "pruned"]


def test_the_runner_up_needs_a_second_fitting_layout():
    def verdict(points):
        frame = point_frame(("variant", "replicas"), points, [], MACHINE)
        return advise_verdict(frame, workload="mnist", ipus=4, global_batch=256, method="exhaustive",
                              valid_points=len(points), pruned={}, asked=[{"variant": "onchip"}, {"replicas": "8"}])

    one = verdict([POINTS[1], POINTS[4]])
    assert (one.fastest.label, one.runner_up, one.fitting) == ("b", None, 1)
    two = verdict([POINTS[1], POINTS[2], POINTS[4]])
    assert (two.fastest.label, two.runner_up.label, two.fitting) == ("b", "c", 2)
    assert [a.fits for a in two.asked] == [True, False]


def test_the_records_are_frozen():
    import dataclasses

    facts = advise_verdict(_frame(), workload="mnist", ipus=4, global_batch=256, method="exhaustive", valid_points=5,
                           pruned={}, asked=[{"variant": "offchip"}])
    for record in (MACHINE, POINTS[0], facts, facts.fastest, facts.asked[0]):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, dataclasses.fields(record)[0].name, None)


def test_among_equally_lean_layouts_the_smallest_named_is_the_faster():
    slow = _point("slow", "onchip", 1, 1000.0, 200_000.0)
    quick = _point("quick", "offchip", 4, 2000.0, 200_000.0)
    fastest = _point("fastest", "onchip", 8, 4000.0, 600_000.0)
    frame = point_frame(("variant", "replicas"), [slow, quick, fastest], [], MACHINE)
    facts = advise_verdict(frame, workload="mnist", ipus=4, global_batch=256, method="exhaustive", valid_points=3,
                           pruned={})
    assert (facts.fastest.label, facts.smallest.label) == ("fastest", "quick")
