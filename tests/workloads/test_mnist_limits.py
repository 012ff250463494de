"""Knobs that cannot fit this machine are refused up front with one line naming them."""

from __future__ import annotations

import pytest

from profcompare.errors import WorkloadError
from workloads import find_variant, parse_knobs
from workloads._mnist_limits import check_size, host_bytes, human_bytes, parameters

GIB = 2**30


def _config(**overrides: object) -> dict:
    return parse_knobs(find_variant("onchip"), overrides) if not overrides else {
        **parse_knobs(find_variant("onchip"), {}), **overrides}


def _defaults() -> dict:
    return {k.name: k.default for k in find_variant("onchip").knobs}


def test_parameter_count_of_the_tutorial_mlp() -> None:
    # 784*512+512 + 2*(512*512+512) + 512*10+10
    assert parameters(_config()) == 932_362


def test_tutorial_defaults_fit_comfortably() -> None:
    config = _config()
    assert host_bytes(config) < 1 * GIB
    check_size(config, _defaults(), memory=24 * GIB)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"hidden": 1_000_000_000}, r"^--hidden 1000000000 needs about 256 EB of host memory for the emulator; this machine has 24 GiB$"),
        ({"layers": 1_000_000, "hidden": 8}, r"^--hidden 8, --layers 1000000 would take about 4.2 hours to compile|needs about"),
        ({"steps": 10**7, "hidden": 4096}, r"^--hidden 4096, --steps 10000000 needs about 8.0 TB of host memory"),
    ],
)
def test_oversized_runs_are_refused(overrides: dict, message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        check_size(_config(**overrides), _defaults(), memory=24 * GIB)


def test_compile_time_limit() -> None:
    config = _config(layers=2_000_000, hidden=1)
    with pytest.raises(WorkloadError, match=r"^--layers 2000000 would take about 8.3 hours to compile \(about 15 ms per layer\); the limit is 6.0 hours$"):
        check_size(config, _defaults(), memory=2**60)


def test_run_time_limit() -> None:
    config = _config(steps=10**6)
    with pytest.raises(WorkloadError, match=r"^--steps 1000000 would take about .* days to execute in the emulator"):
        check_size(config, _defaults(), memory=2**60)


def test_the_cli_refuses_before_spawning_anything(tmp_path, capsys) -> None:
    from profcompare.cli import main

    # within the knob's bound (2**20) but not within this machine: the size check names it
    assert main(["run", "onchip", "--hidden", "1000000", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("profcompare: error: --hidden 1000000 needs about 256 TB of host memory")
    assert len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_human_bytes() -> None:
    assert human_bytes(24 * GIB) == "24 GiB"
    assert human_bytes(4.2e15) == "4.2 PB"
    assert human_bytes(512) == "512 B"
