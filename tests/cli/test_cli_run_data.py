"""``run --data DIR`` checks up front that DIR holds the MNIST training files the workload reads
(torchvision layout): a wrong directory is one line and exit 2 before any variant starts, not a
failure inside every variant."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from workloads import find_variant, parse_knobs

IMAGES, LABELS = "train-images-idx3-ubyte", "train-labels-idx1-ubyte"


def _refused(outcome: Any, data: pathlib.Path, missing: str) -> None:
    assert outcome.exception is None, outcome.exception
    assert outcome.exit_code == 2, (outcome.exit_code, outcome.stderr)
    assert outcome.stderr.strip().splitlines() == [
        f"profcompare: error: bad value '{data}' for knob 'data': no MNIST file {missing} (.gz or not) "
        "in its MNIST/raw/, raw/ or itself (the torchvision layout)"
    ]


def test_a_directory_without_mnist_files_is_refused_before_anything_runs(run_cli: Any, tmp_path: pathlib.Path) -> None:
    data, out = tmp_path / "empty", tmp_path / "reports"
    data.mkdir()
    _refused(run_cli("run", "onchip", "offchip", "--data", str(data), "--out", str(out)), data, f"{IMAGES} or {LABELS}")
    assert not out.exists()  # no run directory: nothing was started


@pytest.mark.parametrize(("present", "missing"), [(IMAGES + ".gz", LABELS), (LABELS, IMAGES)])
def test_the_missing_file_is_named(run_cli: Any, tmp_path: pathlib.Path, present: str, missing: str) -> None:
    data, out = tmp_path / "mnist", tmp_path / "reports"
    (data / "MNIST" / "raw").mkdir(parents=True)
    (data / "MNIST" / "raw" / present).write_bytes(b"")
    _refused(run_cli("run", "onchip", "--data", str(data), "--out", str(out)), data, missing)
    assert not out.exists()


@pytest.mark.parametrize("folder", ["MNIST/raw", "raw", "."])
def test_every_layout_the_workload_reads_is_accepted(tmp_path: pathlib.Path, folder: str) -> None:
    (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    (tmp_path / folder / (IMAGES + ".gz")).write_bytes(b"")
    (tmp_path / folder / LABELS).write_bytes(b"")
    assert parse_knobs(find_variant("onchip"), {"data": str(tmp_path)})["data"] == str(tmp_path)
