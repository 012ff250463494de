"""The time diff of the main job (``profcompare run onchip offchip-sharded`` on the simulator):
at least 95% of the device-cycle difference charged to parameters, its rows adding up to the
difference, and the exposed / overlapped split agreeing with the two traces."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from click.testing import CliRunner

from profcompare.cli import cli
from profcompare.comparison import Comparison, compare
from profcompare.readers import open_report


@pytest.fixture(scope="module")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> Comparison:
    out = tmp_path_factory.mktemp("time-diff")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
        patch.delenv("PROFCOMPARE_BACKEND", raising=False)
        result = CliRunner().invoke(cli, ["run", "onchip", "offchip-sharded", "--out", str(out), "--name", "t",
                                          "--backend", "sim", "-q"])
    assert result.exit_code == 0, result.output
    run = pathlib.Path(out) / "t"
    return compare(open_report(str(run / "onchip")), open_report(str(run / "offchip-sharded")))


def test_rows_add_up_to_the_device_cycle_difference(main_job: Comparison) -> None:
    diff = main_job.time_diff
    change = float(main_job.summary.loc["cycles_per_step", "delta"])
    assert change == 2_758_363.0  # 1,901,454 -> 4,659,817 device cycles per run
    assert diff["delta_cycles"].sum() == pytest.approx(change, abs=1e-6)
    summary = main_job.time_diff_summary()
    assert (summary.base_cycles, summary.new_cycles) == (1_901_454.0, 4_659_817.0)


def test_at_least_95_percent_charged_to_parameters(main_job: Comparison) -> None:
    summary = main_job.time_diff_summary()
    assert summary.attributed_share == 1.0
    assert summary.parameter_share >= 0.95
    assert round(100 * summary.parameter_share, 1) == 95.4


def test_largest_causes_are_the_optimizer_state_transfers(main_job: Comparison) -> None:
    causes = main_job.time_causes()
    top = causes.head(6)
    assert set(top["role"]) == {"optimizer_state"}
    assert set(top["kind"]) == {"remote load", "remote store"}
    fc1 = causes[(causes["parameter"] == "fc1.weight") & (causes["kind"] == "remote load")].iloc[0]
    # first + second order + step of fc1.weight's shard: 200,704 + 401,408 + 4 B per replica
    assert fc1["new_bytes_moved"] == 602_116.0
    # one merged exchange: one Begin (113,051 cycles) and one End (131) for the 3 loads, where 3
    # separate transfers at the old fixed cost were 3 x 38,930 and 3 x 131 (320,566 then)
    assert fc1["delta_cycles"] == 316_565.0
    gathered = causes[(causes["parameter"] == "fc1.weight") & (causes["role"] == "gathered_weight")].iloc[0]
    # recorded by the (simulated) profile: the all-gather of the 401,408 B shard over 4 replicas is 3
    # ring steps, each IPU sending and receiving a shard a step: 2 x 3 x 401,408 B
    assert (gathered["kind"], gathered["new_bytes_moved"]) == ("collective", 2_408_448.0)


def test_exposed_and_overlapped_agree_with_the_traces(main_job: Comparison) -> None:
    diff = main_job.time_diff
    # one IPU per replica and its blocks in sequence: nothing computes beside a step, so every
    # changed cycle is exposed
    for report in (main_job.base, main_job.new):
        trace = report.trace.sort_values("cycles_from")
        assert set(trace["ipu"]) == {0}
        assert (trace["cycles_from"].to_numpy()[1:] >= trace["cycles_to"].to_numpy()[:-1]).all()
    assert np.allclose(diff["delta_overlapped_cycles"], 0.0)
    assert np.allclose(diff["delta_exposed_cycles"] + diff["delta_overlapped_cycles"], diff["delta_cycles"])
    summary = main_job.time_diff_summary()
    assert summary.delta_exposed_cycles == pytest.approx(2_758_363.0)


def test_verdict_names_the_causes(main_job: Comparison) -> None:
    from profcompare.render.verdict_words import comparison_sentences, comparison_verdict

    time = comparison_sentences(comparison_verdict(main_job))[2]
    assert ("device 1.430 ms -> 3.504 ms (+2.074 ms, largest causes: optimizer_state remote load/store of "
            "fc1.weight, fc2.weight and 6 more +2.072 ms (all exposed), gradient collective of fc1.weight, "
            "fc4.bias and 1 more +0.053 ms (all exposed))") in time


def test_gates(main_job: Comparison) -> None:
    from profcompare.comparison import check_limits, parse_limit

    assert check_limits(main_job, [parse_limit("time_diff_attributed<95%")]) == []
    assert check_limits(main_job, [parse_limit("exposed_cycles>5%")]) == [
        "exposed_cycles>5%: exposed_cycles worse by 145.07% (grew 1,901,454 cycles -> 4,659,817 cycles), above the "
        "+5% limit"]
