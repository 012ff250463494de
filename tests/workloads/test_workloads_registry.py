"""The workload registry: discovery, variants and knob validation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from profcompare.errors import WorkloadError
from workloads import find_variant, list_workloads, parse_knobs

DEFAULTS = {
    "replicas": 4,
    "grad_accum": 8,
    "micro_batch": 8,
    "sharded_threshold": 512,
    "hidden": 512,
    "layers": 3,
    "steps": 2,
    "lr": 1e-3,
    "seed": 42,
    "device": "ipu_hw",
    "data": "",
}


def test_mnist_is_registered_with_its_four_variants() -> None:
    names = [w.name for w in list_workloads()]
    assert "mnist" in names
    mnist = find_variant("offchip-sharded")
    assert mnist.name == "mnist"
    assert list(mnist.variants) == ["onchip", "onchip-sharded", "offchip", "offchip-sharded"]
    assert all(desc and "\n" not in desc for desc in mnist.variants.values())
    assert mnist.description and "\n" not in mnist.description


def test_defaults_follow_the_tutorial() -> None:
    assert parse_knobs(find_variant("onchip"), {}) == DEFAULTS


def test_overrides_accept_text_and_numbers() -> None:
    config = parse_knobs(
        find_variant("onchip"), {"sharded_threshold": "1e10", "replicas": "2", "lr": "0.01", "grad-accum": 4}
    )
    assert config["sharded_threshold"] == 10**10 and config["replicas"] == 2
    assert config["lr"] == 0.01 and config["grad_accum"] == 4


@pytest.mark.parametrize(
    ("overrides", "pattern"),
    [
        ({"replicas": 3}, r"knob 'replicas'.*powers of two from 1 to 64"),
        ({"replicas": 0}, r"knob 'replicas'"),
        ({"replicas": "two"}, r"bad value 'two' for knob 'replicas': expected an integer"),
        ({"grad_accum": 0}, r"knob 'grad_accum'.*integers from 1 to 65536"),
        ({"micro_batch": 2.5}, r"knob 'micro_batch': expected an integer"),
        ({"device": "cpu"}, r"knob 'device'; valid choices: ipu_hw, ipu_model"),
        ({"lr": -1}, r"knob 'lr'.*numbers > 0"),
        ({"lr": "nan"}, r"knob 'lr'"),
        ({"steps": True}, r"knob 'steps'"),
        ({"colour": "red"}, r"unknown knob 'colour'.*valid knobs: replicas, grad_accum"),
    ],
)
def test_bad_knob_values_give_one_line_errors(overrides: dict, pattern: str) -> None:
    with pytest.raises(WorkloadError, match=pattern) as info:
        parse_knobs(find_variant("onchip"), overrides)
    assert "\n" not in str(info.value)


def test_unknown_variant_lists_valid_ones() -> None:
    with pytest.raises(WorkloadError, match=r"unknown variant 'on-chip' \(did you mean 'onchip' or 'offchip'\?\); valid variants: resident, "
                       r"resident-offchip, phased, phased-rts, phased-rts-recompute, onchip, onchip-sharded, offchip, "
                       r"offchip-sharded$"):
        find_variant("on-chip")


def test_unknown_variant_passed_to_run() -> None:
    mnist = find_variant("onchip")
    with pytest.raises(WorkloadError, match="valid variants: onchip"):
        mnist.run("sharded", parse_knobs(mnist, {}))


def test_listing_workloads_does_not_import_the_sdk_seam() -> None:
    # `profcompare workloads` must work even when the selected backend cannot be imported
    code = (
        "import sys, workloads; ws = workloads.list_workloads(); "
        "print([w.name for w in ws], 'profcompare.sdk' in sys.modules, 'workloads._mnist_program' in sys.modules, "
        "'workloads._gpt_program' in sys.modules)"
    )
    env = {**os.environ, "PROFCOMPARE_BACKEND": "sdk"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "['gpt', 'mnist'] False False False"


def test_data_directory_is_made_absolute_and_must_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the variant runs in its own directory, so a relative --data must be resolved where the user typed it
    (tmp_path / "mnist").mkdir()
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):  # checked up front too
        (tmp_path / "mnist" / name).write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    mnist = find_variant("onchip")
    assert parse_knobs(mnist, {"data": "mnist"})["data"] == str(tmp_path / "mnist")
    assert parse_knobs(mnist, {"data": ""})["data"] == ""
    with pytest.raises(
        WorkloadError, match=r"bad value '.*missing' for knob 'data': valid values are existing directories"
    ) as info:
        parse_knobs(mnist, {"data": "missing"})
    assert "\n" not in str(info.value)
