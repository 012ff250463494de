"""Every MNIST variant builds and trains on the simulator (small sizes keep it fast)."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from profcompare.errors import WorkloadError
from workloads import find_variant, parse_knobs
from workloads.mnist import VARIANTS, samples_per_step, step_batches, training_data

SMALL = {"replicas": 2, "grad_accum": 2, "micro_batch": 8, "hidden": 32, "layers": 2, "sharded_threshold": 64}


@pytest.fixture(autouse=True)
def _sim_without_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_BACKEND", "sim")
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_variant_trains_and_loss_goes_down(variant: str) -> None:
    mnist = find_variant(variant)
    config = parse_knobs(mnist, {**SMALL, "steps": 4, "lr": 3e-2})
    result = mnist.run(variant, config)
    assert result.variant == variant and result.backend == "sim"
    assert result.steps == 4 and len(result.losses) == 4
    assert result.samples_per_step == 8 * 2 * 2
    assert all(np.isfinite(result.losses))
    assert result.losses[-1] < result.losses[0] * 0.8, result.losses
    assert min(result.build_seconds, result.compile_seconds, result.run_seconds) >= 0


@pytest.mark.parametrize("variant", ["onchip", "offchip-sharded"])
def test_single_replica_and_no_accumulation(variant: str) -> None:
    # one replica: the sharded variants shard nothing; grad_accum 1: no accumulators
    mnist = find_variant(variant)
    for overrides in ({"replicas": 1}, {"grad_accum": 1}, {"replicas": 1, "grad_accum": 1}):
        config = parse_knobs(mnist, {**SMALL, **overrides, "steps": 2})
        result = mnist.run(variant, config)
        assert len(result.losses) == 2 and all(np.isfinite(result.losses))
        assert result.samples_per_step == samples_per_step(config)


def test_steps_use_fresh_samples_and_wrap_around() -> None:
    config = parse_knobs(find_variant("onchip"), {**SMALL, "steps": 3})
    data = training_data(config)
    assert len(data) == 3 * samples_per_step(config)
    batches = step_batches(data, config)
    assert [b[0].shape for b in batches] == [(32, 28, 28)] * 3
    seen = np.concatenate([b[1] for b in batches])
    assert len(seen) == len(data)
    small = type(data)(data.images[:10], data.labels[:10], "tiny")
    wrapped = step_batches(small, config)
    assert wrapped[0][0].shape == (32, 28, 28)


def _idx(array: np.ndarray) -> bytes:
    array = np.ascontiguousarray(array, dtype=np.uint8)
    return bytes([0, 0, 8, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


def test_trains_on_mnist_idx_files(tmp_path: Path) -> None:
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, 40).astype(np.uint8)
    images = (rng.integers(0, 40, (40, 28, 28)) + labels[:, None, None] * 20).astype(np.uint8)
    (raw / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(_idx(images)))
    (raw / "train-labels-idx1-ubyte").write_bytes(_idx(labels))
    mnist = find_variant("onchip")
    result = mnist.run("onchip", parse_knobs(mnist, {**SMALL, "steps": 2, "data": str(tmp_path)}))
    assert len(result.losses) == 2 and result.extra["data"] == str(tmp_path)


def test_bad_data_directory_fails_before_building(tmp_path: Path) -> None:
    mnist = find_variant("offchip")
    # refused with the other knobs, before any variant runs
    with pytest.raises(WorkloadError, match="no MNIST file train-images-idx3-ubyte or train-labels-idx1-ubyte"):
        parse_knobs(mnist, {**SMALL, "data": str(tmp_path)})
