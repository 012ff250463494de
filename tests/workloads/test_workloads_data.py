"""MNIST IDX reading (torchvision layout, gz or raw) and the synthetic data set."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from profcompare.errors import WorkloadError
from workloads.data import MNIST_MEAN, MNIST_STD, load_mnist, synthetic_mnist


def idx_bytes(array: np.ndarray, *, type_code: int = 0x08) -> bytes:
    array = np.ascontiguousarray(array, dtype=np.uint8)
    return bytes([0, 0, type_code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


def write_set(folder: Path, images: np.ndarray, labels: np.ndarray, *, compress: bool, prefix: str = "train") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, array in ((f"{prefix}-images-idx3-ubyte", images), (f"{prefix}-labels-idx1-ubyte", labels)):
        payload = idx_bytes(array)
        if compress:
            (folder / f"{name}.gz").write_bytes(gzip.compress(payload))
        else:
            (folder / name).write_bytes(payload)


@pytest.fixture()
def tiny() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (5, 28, 28)).astype(np.uint8), np.array([3, 1, 4, 1, 5], np.uint8)


@pytest.mark.parametrize("compress", [True, False])
def test_reads_torchvision_layout_gz_and_raw(tmp_path: Path, tiny, compress: bool) -> None:
    images, labels = tiny
    write_set(tmp_path / "MNIST" / "raw", images, labels, compress=compress)
    data = load_mnist(tmp_path)
    assert data.images.shape == (5, 28, 28) and data.images.dtype == np.float32
    np.testing.assert_allclose(data.images, (images / 255.0 - MNIST_MEAN) / MNIST_STD, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(data.labels, labels.astype(np.int32))
    assert data.labels.dtype == np.int32 and data.source == str(tmp_path)


def test_reads_files_directly_in_the_directory_and_test_split(tmp_path: Path, tiny) -> None:
    images, labels = tiny
    write_set(tmp_path, images, labels, compress=False, prefix="t10k")
    assert len(load_mnist(tmp_path, "test")) == 5


def test_missing_directory_and_missing_file(tmp_path: Path, tiny) -> None:
    with pytest.raises(WorkloadError, match="does not exist"):
        load_mnist(tmp_path / "nowhere")
    images, labels = tiny
    (tmp_path / "train-images-idx3-ubyte").write_bytes(idx_bytes(images))
    with pytest.raises(WorkloadError, match=r"train-labels-idx1-ubyte\[\.gz\] not found"):
        load_mnist(tmp_path)


def _write_pair(folder: Path, image_payload: bytes, label_payload: bytes) -> None:
    (folder / "train-images-idx3-ubyte").write_bytes(image_payload)
    (folder / "train-labels-idx1-ubyte").write_bytes(label_payload)


def test_bad_magic(tmp_path: Path, tiny) -> None:
    images, labels = tiny
    _write_pair(tmp_path, idx_bytes(images, type_code=0x0D), idx_bytes(labels))
    with pytest.raises(WorkloadError, match="bad magic number 0x00000d03"):
        load_mnist(tmp_path)


def test_wrong_number_of_dimensions(tmp_path: Path, tiny) -> None:
    images, labels = tiny
    _write_pair(tmp_path, idx_bytes(images.reshape(5, 784)), idx_bytes(labels))
    with pytest.raises(WorkloadError, match="2 dimensions, expected 3"):
        load_mnist(tmp_path)


def test_wrong_image_size(tmp_path: Path, tiny) -> None:
    _, labels = tiny
    _write_pair(tmp_path, idx_bytes(np.zeros((5, 14, 14))), idx_bytes(labels))
    with pytest.raises(WorkloadError, match="14x14, expected 28x28"):
        load_mnist(tmp_path)


def test_truncated_data_and_header(tmp_path: Path, tiny) -> None:
    images, labels = tiny
    _write_pair(tmp_path, idx_bytes(images)[:-10], idx_bytes(labels))
    with pytest.raises(WorkloadError, match="truncated"):
        load_mnist(tmp_path)
    _write_pair(tmp_path, idx_bytes(images)[:9], idx_bytes(labels))
    with pytest.raises(WorkloadError, match="truncated header"):
        load_mnist(tmp_path)


def test_corrupt_gzip(tmp_path: Path, tiny) -> None:
    images, labels = tiny
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(idx_bytes(images))[:30])
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(idx_bytes(labels))
    with pytest.raises(WorkloadError, match="cannot read MNIST file"):
        load_mnist(tmp_path)


def test_count_mismatch_and_bad_label(tmp_path: Path, tiny) -> None:
    images, labels = tiny
    _write_pair(tmp_path, idx_bytes(images), idx_bytes(labels[:4]))
    with pytest.raises(WorkloadError, match="5 images .* but 4 labels"):
        load_mnist(tmp_path)
    _write_pair(tmp_path, idx_bytes(images), idx_bytes(np.array([1, 2, 3, 4, 12])))
    with pytest.raises(WorkloadError, match="label 12 is not in 0..9"):
        load_mnist(tmp_path)


def test_errors_are_one_line(tmp_path: Path, tiny) -> None:
    images, labels = tiny
    _write_pair(tmp_path, idx_bytes(images)[:-1], idx_bytes(labels))
    with pytest.raises(WorkloadError) as info:
        load_mnist(tmp_path)
    assert "\n" not in str(info.value)


def test_synthetic_is_deterministic_and_class_separable() -> None:
    first, again = synthetic_mnist(400, 7), synthetic_mnist(400, 7)
    np.testing.assert_array_equal(first.images, again.images)
    assert first.images.shape == (400, 28, 28) and set(np.unique(first.labels)) == set(range(10))
    # nearest class mean classifies far above chance: there is a pattern to learn
    flat = first.images.reshape(400, -1)
    means = np.stack([flat[first.labels == c].mean(axis=0) for c in range(10)])
    predicted = np.argmin(((flat[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    assert (predicted == first.labels).mean() > 0.9


def test_a_written_synthetic_mnist_reads_back_in_the_torchvision_layout(tmp_path: Path) -> None:
    from workloads.data import read_idx, write_synthetic_idx

    raw = write_synthetic_idx(tmp_path, {"train": 12, "test": 5})
    assert raw == tmp_path / "MNIST" / "raw"
    # uncompressed, under the names torchvision checks for before it would download
    assert sorted(p.name for p in raw.iterdir()) == ["t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                                                      "train-images-idx3-ubyte", "train-labels-idx1-ubyte"]
    images = read_idx(raw / "train-images-idx3-ubyte", 3)
    assert images.shape == (12, 28, 28) and images.min() == 0 and images.max() == 255
    assert len(load_mnist(tmp_path, "test")) == 5
    assert set(load_mnist(tmp_path, "train").labels.tolist()) <= set(range(10))
