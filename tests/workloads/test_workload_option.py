"""``--workload`` (run, sweep) and ``workload=`` (profcompare.run, run_sweep): variants resolved
in one workload only, one-line errors listing that workload's variants otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from profcompare import runner
from profcompare.runner import sweep
from profcompare.cli import main
from profcompare.errors import WorkloadError
from workloads import find_variant, find_workload


def test_variant_found_in_the_named_workload() -> None:
    assert find_variant("phased", "gpt").name == "gpt"
    assert find_variant("onchip", "mnist").name == "mnist"
    assert find_variant("phased").name == "gpt"  # without a workload: by name across them, as before


def test_variant_of_another_workload_lists_the_named_workloads_variants() -> None:
    with pytest.raises(WorkloadError) as info:
        find_variant("onchip", "gpt")
    assert str(info.value) == ("unknown variant 'onchip' of workload gpt; valid variants: resident, "
                               "resident-offchip, phased, phased-rts, phased-rts-recompute")
    with pytest.raises(WorkloadError, match=r"^unknown variant 'phased-rts' of workload mnist; valid variants: "
                                            r"onchip, onchip-sharded, offchip, offchip-sharded$"):
        find_variant("phased-rts", "mnist")


def test_unknown_workload_lists_the_workloads() -> None:
    with pytest.raises(WorkloadError) as info:
        find_workload("gtp")
    assert str(info.value) == "unknown workload 'gtp' (did you mean 'gpt'?); valid workloads: gpt, mnist"


def test_jobs_and_sweep_points_use_the_named_workload() -> None:
    (job,) = runner.make_jobs(["phased-rts"], {"tp": "4"}, workload="gpt")
    assert (job.workload, job.variant, job.config["tp"]) == ("gpt", "phased-rts", 4)
    with pytest.raises(WorkloadError, match="^unknown variant 'onchip' of workload gpt;"):
        runner.make_jobs(["phased", "onchip"], {}, workload="gpt")
    # a knob of the other workload is refused too (gpt has no --replicas)
    with pytest.raises(WorkloadError, match="^unknown knob 'replicas' for workload gpt"):
        runner.make_jobs(["phased"], {"replicas": "8"}, workload="gpt")
    points = sweep.expand_grid("phased", [("dp", ["1", "2"])], {}, workload="gpt")
    assert [p.job.label for p in points] == ["dp=1", "dp=2"]
    with pytest.raises(WorkloadError, match="^unknown variant 'phased' of workload mnist;"):
        sweep.expand_grid("phased", [("dp", ["1"])], {}, workload="mnist")


def test_python_api_refuses_a_variant_outside_the_workload(tmp_path: Path) -> None:
    import profcompare as pc

    with pytest.raises(WorkloadError, match="^unknown variant 'onchip' of workload gpt;"):
        pc.run(["onchip"], workload="gpt", backend="sim", out=tmp_path)
    assert not any(tmp_path.iterdir())  # refused before anything is written


@pytest.mark.parametrize("command", [["run", "--workload", "gpt", "onchip"],
                                     ["sweep", "--workload", "gpt", "onchip", "--param", "dp=1,2"],
                                     ["run", "--workload", "nope", "onchip"]])
def test_cli_refuses_in_one_line(command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*command, "--out", str(tmp_path), "--backend", "sim", "-q"])
    err = capsys.readouterr().err
    assert code != 0
    assert len(err.strip().splitlines()) == 1
    expected = ("unknown workload 'nope'" if "nope" in command else
                "unknown variant 'onchip' of workload gpt; valid variants: resident, resident-offchip, phased, "
                "phased-rts, phased-rts-recompute")
    assert expected in err
    assert "Traceback" not in err
    assert not any(tmp_path.iterdir())
