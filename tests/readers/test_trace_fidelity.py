"""The simulator's execution trace against the real Graph Analyser trace in shared/data.

The real trace is of popxl-addons' pipelined MNIST on 2 Mk2 IPUs (shared/data/README.md); our own
program (pipelined_mlp_program.py) has its layer sizes, batch, pipeline depth, host transfers and
steps. profcompare.analysis.trace_fidelity compares the two; the targets of docs/ipu-model.md section 12
are asserted where the model meets them, and every figure is pinned so a change shows.
"""

from __future__ import annotations

import pandas as pd
import pytest
from pipelined_mlp_program import pipelined_mlp_ir
from trace_pva import TRACE_FILE, shared_data_file

from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.emulator.targets import MK2
from profcompare.model import trace_from_blocks
from profcompare.readers import open_report
from profcompare.analysis.trace_fidelity import (
    compare_traces,
    host_copy_costs,
    ipu_figures,
    overlaps,
    pipeline_structure,
    relative_error,
    split_runs,
)

SPAN_TARGET, BLOCKS_TARGET, CYCLES_TARGET = 0.15, 0.20, 0.25


@pytest.fixture(scope="module")
def real_trace() -> pd.DataFrame:
    return open_report(shared_data_file(TRACE_FILE)).trace


@pytest.fixture(scope="module")
def sim_trace() -> pd.DataFrame:
    return compile_program(lower(pipelined_mlp_ir()), MK2).with_execution(1).trace


@pytest.fixture(scope="module")
def comparison(sim_trace, real_trace):
    return compare_traces(sim_trace, real_trace)


def test_fc4s_transposed_weights_take_the_copy_path_as_in_the_real_trace(sim_trace, real_trace):
    # the input gradient of fc4 (512 x 10 weights) regroups its weights through exchanges in
    # both traces, once per micro-batch; fc2's and fc3's (512 x 512) transpose with vertices:
    # no such exchange on IPU 0, nor a second one on IPU 1
    def per_ipu(trace, pattern, runs):
        rows = trace[(trace["type"] == "DoExchange") & trace["name"].str.contains(pattern, regex=False)]
        return {ipu: n // runs for ipu, n in rows.groupby("ipu").size().items()}

    assert per_ipu(sim_trace, "preRegroup", 1) == per_ipu(real_trace, "fc4.weight_to_", 2) == {1: 6}
    assert per_ipu(sim_trace, "rearranged", 1) == per_ipu(real_trace, "actsRearranged", 2) == {1: 6}


def test_the_host_copy_constants_are_the_real_traces_medians(real_trace):
    costs = host_copy_costs(real_trace)
    # 38 host copies per run on each IPU: 2 opening control copies, then 18 transfers (6 images,
    # 6 labels, 6 losses) each a control copy and the data copy
    assert costs.copies_per_run == 38
    assert (costs.control_begin, costs.control_mid, costs.control_end) == (
        MK2.host_sync_begin_cycles, MK2.stream_copy_mid_cycles, MK2.host_sync_end_cycles) == (269, 1109, 140)
    assert (costs.data_begin, costs.data_end) == (MK2.stream_copy_begin_cycles, MK2.stream_copy_end_cycles) == (7903, 9870)
    assert costs.run_start_wait == MK2.run_start_wait_cycles == 464_832  # (473,297 + 456,367) / 2


def test_the_real_trace_is_two_runs_of_a_three_stage_pipeline(real_trace):
    runs = split_runs(real_trace)
    assert len(runs) == 2  # Poplar profiles two runs by default
    assert [int(r["cycles_from"].min()) for r in runs] == [0, 1_350_956]
    structure = pipeline_structure(runs[0])
    # 6 micro-batches through 3 stages: 2 ramp-up, 4 steady, 2 ramp-down pipeline cycles
    assert structure.kinds == ("ramp-up",) * 2 + ("steady",) * 4 + ("ramp-down",) * 2
    assert structure.compute[2] == (45_189, 34_960)  # stages 0 + 2 on IPU 0, stage 1 on IPU 1
    both = overlaps(runs[0])
    assert round(both.host_copies_together, 4) == 0.9423  # every IPU takes part in a host copy
    assert round(both.compute_together, 4) == 0.7518


def test_our_pipelined_mlp_against_the_real_trace(comparison):
    c = comparison
    assert c.real_runs == 2
    # spans: both IPUs end together (the run ends when both have)
    assert c.sim_spans == {0: 1_200_161, 1: 1_200_161}
    assert c.real_spans == {0: 1_270_375.0, 1: 1_270_375.0}
    # the span meets its 15% target since the Convolve is PopLibs' AMP estimate and the mean
    # accumulations, stash counters, pipeline-buffer copies, the loss's one-hot encoding, Adam's
    # updater as PopLibs' generated map codelet, the stashes as PopLibs' dynamic slice and the
    # partials' reduction in poplin's stages are there (docs section 12); the first layer's input
    # gradient, not required and pruned by PopART's autodiff, is not computed (IPU 0: 42 Convolve
    # blocks a run, as in the real trace); -10.7% before the matmuls' rearrangement copies were
    # costed by operand, source layout and region (conv_rearrange.py)
    for ipu in (0, 1):
        assert round(c.span_error(ipu), 4) == -0.0553
        assert abs(c.span_error(ipu)) <= SPAN_TARGET
    rows = {(r.ipu, r.type): r for r in c.compared_rows}
    # what the model meets: every block count within 20%, cycles per type within 25%. DoExchange:
    # each of the 7 exchanges' on-chip moves on each IPU (14), each stage output's move into the
    # pipeline's buffer (6 per IPU), the repeat loop's iterator (4, IPU 0), the loss's one-hot
    # labels copied to the probabilities' layout (6, IPU 1) and fc4's input gradient's transposed
    # weights on PopLibs' copy path (IPU 1: a preRegroup copy and the rearranged operands' copy,
    # 2 x 6 a run, as the real trace's fc4.weight_to_.../preRegroup and .../actsRearranged) and
    # the Switch that selects the engine's program at the start of each run, its control value
    # broadcast to both IPUs (the real switchControlBroadcast: a DoExchange, an ExternalSync and a
    # GlobalExchange per IPU and run; docs section 12). Syncs only before steps that receive and
    # a matmul's reduction in one compute set per stage (Reduce0, Reduce1): OnTileExecute and
    # InternalSync blocks within 6.3% (docs section 3)
    gaps_blocks: set[tuple[int, str]] = set()
    # IPU 1's ExternalSync (its wait for IPU 0's first stage in the ramp-up: 12,382 cycles real,
    # 12,452 modelled) meets the target since the stage's two stash writes are PopLibs'
    # DynamicUpdateSlice1D estimate (439 cycles each, the real 622) and its two matmuls' partials
    # are reduced in poplin's two stages (1,202 and 1,049 cycles, the real 960 and 1,018) and the
    # matmuls' rearrangement copies are costed by their regions (13,612 cycles against the real
    # 13,394; 11,582 before). IPU 0's OnTileExecute cycles meet the target since Adam's updater is
    # PopLibs' generated map codelet (14,228 cycles in 4 blocks against the real 13,667; 1,844 before)
    # and the rearrangement copies are costed by operand, source layout and region: 270,642 cycles
    # against the real 262,757 (211,692 before, -19.4%; the real copies: 71,628 cycles in 48 copies
    # a run on IPU 0, the model's 69,636)
    gaps_cycles: set[tuple[int, str]] = set()
    for key, r in rows.items():
        if key not in gaps_blocks:
            assert abs(r.blocks_error) <= BLOCKS_TARGET, key
        if key not in gaps_cycles:
            assert abs(r.cycles_error) <= CYCLES_TARGET, key
    pinned = {key: (r.sim_blocks, r.sim_cycles) for key, r in rows.items()}
    assert pinned == {
        (0, "DoExchange"): (25, 2_944), (0, "ExternalSync"): (8, 1_048), (0, "GlobalExchange"): (8, 6_901),
        (0, "InternalSync"): (283, 26_602), (0, "OnTileExecute"): (523, 270_642), (0, "StreamCopy"): (26, 51_586),
        (0, "StreamCopyBegin"): (38, 646_634), (0, "StreamCopyEnd"): (38, 193_804),
        (1, "DoExchange"): (39, 4_964), (1, "ExternalSync"): (8, 13_612), (1, "GlobalExchange"): (8, 6_901),
        (1, "InternalSync"): (294, 71_976), (1, "OnTileExecute"): (456, 222_332), (1, "StreamCopy"): (12, 13_344),
        (1, "StreamCopyBegin"): (38, 634_986), (1, "StreamCopyEnd"): (38, 232_046),
    }
    # the gaps, as they stand (docs/ipu-model.md section 12): IPU 1's DoExchange cycles over since
    # the one-hot labels' copy is costed at 138 cycles against the real 74 (its bytes on one tile,
    # exchange_cost.py); IPU 1's OnTileExecute cycles over since the model recomputes fc4's forward matmul (6
    # more rearrangement copies and Convolves a run than the real trace) and costs fc3's weight
    # update copy from its unregrouped input (docs section 7)
    assert round(rows[(1, "DoExchange")].blocks_error, 3) == 0.0 and round(rows[(1, "DoExchange")].cycles_error, 3) == 0.093
    assert round(rows[(0, "OnTileExecute")].cycles_error, 3) == 0.030
    assert round(rows[(1, "OnTileExecute")].cycles_error, 3) == 0.132
    assert round(rows[(1, "ExternalSync")].cycles_error, 3) == 0.016
    # the pipeline: the same ramp-up / steady / ramp-down cycles, host copies on every IPU at once
    assert c.sim_pipeline.kinds == c.real_pipeline.kinds
    lengths = {k: (round(c.sim_pipeline.mean_length(k)), round(c.real_pipeline.mean_length(k)))
               for k in ("ramp-up", "steady", "ramp-down")}
    assert lengths == {"ramp-up": (72_052, 114_242), "steady": (111_683, 125_106), "ramp-down": (70_482, 67_502)}
    assert c.sim_overlaps.host_copies_together > 0.9 and c.real_overlaps.host_copies_together > 0.9
    assert c.summary_line() == ("trace fidelity: span error IPU0 -5.5%, IPU1 -5.5%; block counts max error 6.3%; "
                                "cycles per type max error 24.4%")


def _blocks(*rows):
    return trace_from_blocks([(ipu, a, b, kind, name, name, "", 0) for ipu, a, b, kind, name in rows])


def test_split_runs_finds_the_repeats_of_every_ipus_sequence():
    one = [(0, 0, 10, "OnTileExecute", "a"), (0, 10, 15, "InternalSync", "s"), (1, 0, 12, "OnTileExecute", "b"),
           (0, 0, 30, "SyncAns", "w")]
    two = one + [(i, a + 20, b + 20, k, n) for i, a, b, k, n in one if k != "SyncAns"]
    assert len(split_runs(_blocks(*one))) == 1
    runs = split_runs(_blocks(*two))
    assert [sorted(r["cycles_from"].tolist()) for r in runs] == [[0, 0, 0, 10], [20, 20, 30]]


def test_pipeline_structure_and_overlaps_of_a_small_trace():
    rows = []
    t = 0
    # three cycles cut by inter-IPU exchanges: IPU 1 idle in the first, both busy, IPU 0 idle last
    for work0, work1 in ((100, 0), (100, 80), (0, 80)):
        rows += [(0, t, t + 10, "StreamCopyBegin", "Begin"), (1, t, t + 10, "StreamCopyBegin", "Begin")]
        if work0:
            rows.append((0, t + 10, t + 10 + work0, "OnTileExecute", "x"))
        if work1:
            rows.append((1, t + 10, t + 10 + work1, "OnTileExecute", "y"))
        t += 10 + max(work0, work1)
        rows += [(0, t, t + 5, "GlobalExchange", "copy"), (1, t, t + 5, "GlobalExchange", "copy")]
        t += 5
    structure = pipeline_structure(_blocks(*rows))
    assert structure.compute == ((100, 0), (100, 80), (0, 80), (0, 0))[: len(structure.compute)]
    assert structure.kinds[:3] == ("ramp-up", "steady", "ramp-down")
    both = overlaps(_blocks(*rows))
    assert both.host_copies_together == 1.0
    assert both.compute_together == pytest.approx(80 / 100 * 100 / (100 + 100 + 80))


def test_relative_error():
    assert relative_error(115, 100) == pytest.approx(0.15)
    assert relative_error(0, 0) == 0.0 and relative_error(1, 0) == float("inf")


def test_the_real_runs_pipeline_cycles_and_waiting_by_kind(real_trace):
    first, second = split_runs(real_trace)
    for run in (first, second):
        structure = pipeline_structure(run)
        counts = {kind: structure.count(kind) for kind in ("ramp-up", "steady", "ramp-down")}
        assert counts == {"ramp-up": 2, "steady": 4, "ramp-down": 2}
        assert structure.count("prologue") == 0
    # SyncAns cycles per IPU and run: they add up to the trace's 3,666,377 on IPU 0
    assert overlaps(first).waiting == {0: 1_938_822, 1: 2_134_734}
    assert overlaps(second).waiting == {0: 1_727_555, 1: 1_820_968}
    assert overlaps(first).waiting[0] + overlaps(second).waiting[0] == 3_666_377


def test_split_runs_gives_the_ordered_columns_only(real_trace):
    columns = ["ipu", "cycles_from", "cycles_to", "type", "name"]
    runs = split_runs(real_trace)
    one = split_runs(_blocks((0, 0, 10, "OnTileExecute", "a"), (1, 0, 12, "OnTileExecute", "b")))
    for run in [*runs, *one]:
        assert list(run.columns) == columns
        assert run.index.equals(pd.RangeIndex(len(run)))
    assert [len(r) for r in runs] == [2302, 2302] and len(one) == 1


def _cycles_of_compute(first_share: int, median: int = 100, cycles: int = 4):
    """Two IPUs, a pipeline cycle of ``first_share`` compute cycles on each IPU, then ``cycles``
    of ``median`` each, every one closed by an inter-IPU exchange."""
    rows = []
    t = 0
    for work in [first_share] + [median] * cycles:
        rows += [(0, t, t + work, "OnTileExecute", "x"), (1, t, t + work, "OnTileExecute", "y")]
        t += work
        rows += [(0, t, t + 5, "GlobalExchange", "copy"), (1, t, t + 5, "GlobalExchange", "copy")]
        t += 5
    return pipeline_structure(_blocks(*rows))


def test_a_first_cycle_is_a_prologue_only_below_5_percent_of_the_median():
    # 7 cycles against a median of 100: a pipeline cycle (ramping up), not a prologue
    kept = _cycles_of_compute(7)
    assert kept.compute == ((7, 7),) + ((100, 100),) * 4
    assert kept.kinds == ("ramp-up",) + ("steady",) * 4
    # exactly 5% (10 of 200 over both IPUs) is still a pipeline cycle
    assert _cycles_of_compute(5).compute[0] == (5, 5)
    # 3 cycles: a prologue, left out
    dropped = _cycles_of_compute(3)
    assert dropped.compute == ((100, 100),) * 4
    assert dropped.kinds == ("steady",) * 4


def test_a_cycle_15_percent_off_the_median_is_not_steady():
    # steady within 10% of each IPU's median compute per cycle: 95 is, 85 is not
    assert _cycles_of_compute(95).kinds == ("steady",) * 5
    assert _cycles_of_compute(85).kinds == ("ramp-up",) + ("steady",) * 4


def test_split_runs_counts_repeats_of_a_one_block_sequence():
    # every IPU runs the same block four times: four runs of one block each
    blocks = [(ipu, 10 * k, 10 * k + 5, "OnTileExecute", "x") for k in range(4) for ipu in (0, 1)]
    runs = split_runs(_blocks(*blocks))
    assert [r["cycles_from"].tolist() for r in runs] == [[0, 0], [10, 10], [20, 20], [30, 30]]


def test_the_first_run_keeps_a_wait_that_starts_before_its_first_block():
    one = [(0, 5, 15, "OnTileExecute", "a"), (1, 5, 17, "OnTileExecute", "b")]
    two = one + [(i, a + 20, b + 20, k, n) for i, a, b, k, n in one]
    runs = split_runs(_blocks(*two, (1, 0, 5, "SyncAns", "wait")))
    assert [sorted(zip(r["cycles_from"].tolist(), r["type"].tolist())) for r in runs] == [
        [(0, "SyncAns"), (5, "OnTileExecute"), (5, "OnTileExecute")], [(25, "OnTileExecute"), (25, "OnTileExecute")]]


def test_the_pipeline_starts_after_the_run_s_two_opening_host_copies():
    # IPU 0 ends host copies at 10 and 20 (the run's opening ones) and one after the pipeline;
    # four pipeline cycles of 100 compute cycles on both IPUs, each closed by an exchange
    rows = [(0, 0, 10, "StreamCopyEnd", "End"), (0, 10, 20, "StreamCopyEnd", "End")]
    t = 20
    for _ in range(4):
        rows += [(0, t, t + 100, "OnTileExecute", "x"), (1, t, t + 100, "OnTileExecute", "y"),
                 (0, t + 100, t + 105, "GlobalExchange", "copy"), (1, t + 100, t + 105, "GlobalExchange", "copy")]
        t += 105
    rows.append((0, t, t + 10, "StreamCopyEnd", "End"))
    structure = pipeline_structure(_blocks(*rows))
    assert structure.lengths[:4] == (105,) * 4  # from cycle 20, not from the run's start at 0
    assert structure.compute[:4] == ((100, 100),) * 4


def test_back_to_back_exchanges_belong_to_one_pipeline_cycle():
    # six segments cut by exchanges; the 2nd and 5th hold no compute (an exchange right after
    # another) and are merged into the cycle after them
    rows = []
    t = 0
    for work in (100, 0, 100, 100, 0, 100):
        if work:
            rows += [(0, t, t + work, "OnTileExecute", "x"), (1, t, t + work, "OnTileExecute", "y")]
        t += work
        rows += [(0, t, t + 5, "GlobalExchange", "copy"), (1, t, t + 5, "GlobalExchange", "copy")]
        t += 5
    structure = pipeline_structure(_blocks(*rows))
    assert structure.lengths == (105, 5 + 105, 105, 5 + 105)
    assert structure.compute == ((100, 100),) * 4
    assert structure.kinds == ("steady",) * 4


def test_compare_traces_of_ipus_and_types_one_side_lacks():
    # simulated: IPU 0 only. Measured: two runs on two IPUs; IPU 1 waits (SyncAns) in the first only
    sim = _blocks((0, 0, 10, "OnTileExecute", "a"))
    real = _blocks((0, 0, 10, "OnTileExecute", "a"), (0, 20, 30, "OnTileExecute", "a"),
                   (1, 0, 12, "OnTileExecute", "b"), (1, 12, 20, "SyncAns", "wait"), (1, 20, 32, "OnTileExecute", "b"))
    c = compare_traces(sim, real)
    assert c.real_runs == 2
    assert [(r.ipu, r.type, r.sim_blocks, r.real_blocks, r.sim_cycles, r.real_cycles) for r in c.rows] == [
        (0, "OnTileExecute", 1, 1.0, 10, 10.0), (1, "OnTileExecute", 0, 1.0, 0, 12.0), (1, "SyncAns", 0, 0.5, 0, 4.0)]
    assert c.sim_spans == {0: 10} and c.real_spans == {0: 10.0, 1: 12.0}
    assert (c.span_error(0), c.span_error(1)) == (0.0, -1.0)
    with pytest.raises(ValueError, match="a trace without blocks"):
        compare_traces(sim.iloc[:0], real)


def _copies_without_a_mid():
    """Two IPUs, four host copies each (Begin 10 cycles, End 10 cycles, no Mid), 100 cycles apart."""
    return _blocks(*[(ipu, 100 * k, 100 * k + 10, "StreamCopyBegin", f"{k}/Begin") for k in range(4) for ipu in (0, 1)],
                   *[(ipu, 100 * k + 10, 100 * k + 20, "StreamCopyEnd", f"{k}/End") for k in range(4) for ipu in (0, 1)])


def test_host_copy_costs_of_copies_without_a_mid():
    # copy 0 opens the run, copy 1 is the wait for the host, then a control copy and a data copy
    costs = host_copy_costs(_copies_without_a_mid())
    assert (costs.control_begin, costs.control_mid, costs.control_end) == (10.0, 0.0, 10.0)
    assert (costs.data_begin, costs.data_end, costs.run_start_wait, costs.copies_per_run) == (10.0, 10.0, 10.0, 4)


def test_the_figures_are_frozen():
    import dataclasses

    one = _blocks((0, 0, 10, "OnTileExecute", "a"))
    comparison = compare_traces(one, one)
    for figures in (host_copy_costs(_copies_without_a_mid()), overlaps(one), pipeline_structure(one),
                    ipu_figures(one)[0], comparison, comparison.rows[0]):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(figures, dataclasses.fields(figures)[0].name, 0)
