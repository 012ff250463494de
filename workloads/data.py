"""Training data for the MNIST workloads: MNIST IDX files or a learnable synthetic set.

IDX format (LeCun's MNIST page): big-endian header ``0x00 0x00 <type> <ndims>``, then ``ndims``
uint32 sizes, then the data. Images are type 0x08 (uint8) with 3 dims (N, 28, 28), labels type
0x08 with 1 dim (N,). Files may be gzip-compressed (``.gz``), as torchvision downloads them.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from profcompare.errors import WorkloadError

IMAGE_SIDE = 28
NUM_CLASSES = 10
#: normalisation used by the tutorial's torchvision transform (mean, std of the training set)
MNIST_MEAN = 0.1307
MNIST_STD = 0.3081

_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
_IDX_UBYTE = 0x08


@dataclass(frozen=True)
class Dataset:
    """Images (N, 28, 28) float32, normalised, and labels (N,) int32 in 0..9."""

    images: np.ndarray
    labels: np.ndarray
    source: str  # "synthetic" or the directory the IDX files came from

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def _candidates(directory: Path, filename: str) -> list[Path]:
    paths = []
    for folder in (directory / "MNIST" / "raw", directory / "raw", directory):
        paths += [folder / filename, folder / (filename + ".gz")]
    return paths


def find_idx_file(directory: Path, filename: str) -> Path:
    """Return the path of ``filename`` (or ``filename.gz``) in the torchvision layout
    (``DIR/MNIST/raw``), in ``DIR/raw`` or directly in ``DIR``; WorkloadError when absent."""
    for path in _candidates(directory, filename):
        if path.is_file():
            return path
    raise WorkloadError(
        f"MNIST file {filename}[.gz] not found in {directory} (looked in MNIST/raw/, raw/ and the directory itself)"
    )


def missing_idx_files(directory: Path, split: str = "train") -> list[str]:
    """The names of ``split``'s IDX files (images, labels) that :func:`find_idx_file` would not
    find under ``directory``; empty when both are there."""
    return [name for name in _FILES[split] if not any(path.is_file() for path in _candidates(directory, name))]


def read_idx(path: Path, expected_ndims: int) -> np.ndarray:
    """Return the uint8 array stored in IDX file ``path`` (gzip or raw).

    Raises WorkloadError for an unreadable file, a bad magic number, an unexpected number of
    dimensions or a truncated file.
    """
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise WorkloadError(f"cannot read MNIST file {path}: {exc}") from None
    if len(raw) < 4:
        raise WorkloadError(f"malformed MNIST file {path}: only {len(raw)} bytes")
    zero0, zero1, dtype_code, ndims = raw[0], raw[1], raw[2], raw[3]
    if zero0 != 0 or zero1 != 0 or dtype_code != _IDX_UBYTE:
        magic = int.from_bytes(raw[:4], "big")
        raise WorkloadError(
            f"malformed MNIST file {path}: bad magic number 0x{magic:08x} (expected 0x{0x800 + expected_ndims:08x})"
        )
    if ndims != expected_ndims:
        raise WorkloadError(f"malformed MNIST file {path}: {ndims} dimensions, expected {expected_ndims}")
    header = 4 + 4 * ndims
    if len(raw) < header:
        raise WorkloadError(f"malformed MNIST file {path}: truncated header")
    dims = struct.unpack(f">{ndims}I", raw[4:header])
    count = int(np.prod(dims, dtype=np.int64))
    if len(raw) - header < count:
        raise WorkloadError(
            f"malformed MNIST file {path}: truncated, {len(raw) - header} data bytes for shape {tuple(dims)}"
        )
    return np.frombuffer(raw, dtype=np.uint8, count=count, offset=header).reshape(dims)


def load_mnist(directory: str | Path, split: str = "train") -> Dataset:
    """Return the MNIST ``split`` ("train" or "test") read from IDX files under ``directory``,
    normalised like the tutorial ((x/255 - 0.1307) / 0.3081)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise WorkloadError(f"MNIST data directory {directory} does not exist")
    image_name, label_name = _FILES[split]
    image_path = find_idx_file(directory, image_name)
    label_path = find_idx_file(directory, label_name)
    images = read_idx(image_path, 3)
    labels = read_idx(label_path, 1)
    if images.shape[1:] != (IMAGE_SIDE, IMAGE_SIDE):
        raise WorkloadError(
            f"malformed MNIST file {image_path}: images are {images.shape[1]}x{images.shape[2]}, expected 28x28"
        )
    if images.shape[0] != labels.shape[0]:
        raise WorkloadError(
            f"MNIST files disagree: {images.shape[0]} images in {image_path.name} but {labels.shape[0]} labels"
        )
    if images.shape[0] == 0:
        raise WorkloadError(f"MNIST file {image_path} holds no images")
    if labels.max() >= NUM_CLASSES:
        raise WorkloadError(f"malformed MNIST file {label_path}: label {int(labels.max())} is not in 0..9")
    pixels = (images.astype(np.float32) / np.float32(255.0) - np.float32(MNIST_MEAN)) / np.float32(MNIST_STD)
    return Dataset(pixels.astype(np.float32), labels.astype(np.int32), str(directory))


def synthetic_mnist(num_samples: int, seed: int) -> Dataset:
    """Return ``num_samples`` MNIST-shaped samples with a learnable pattern: each class has a
    fixed random prototype image, and a sample is its class prototype plus Gaussian noise
    (signal-to-noise about 1), so a classifier can learn the classes and the loss goes down."""
    rng = np.random.default_rng(seed)
    prototypes = rng.normal(0.0, 1.0, (NUM_CLASSES, IMAGE_SIDE, IMAGE_SIDE)).astype(np.float32)
    labels = rng.integers(0, NUM_CLASSES, num_samples).astype(np.int32)
    noise = rng.normal(0.0, 1.0, (num_samples, IMAGE_SIDE, IMAGE_SIDE)).astype(np.float32)
    return Dataset(prototypes[labels] + noise, labels, "synthetic")


def write_idx(path: Path, array: np.ndarray) -> None:
    """Write the uint8 ``array`` to ``path`` as an uncompressed IDX file (what :func:`read_idx` reads)."""
    data = np.ascontiguousarray(array, dtype=np.uint8)
    header = bytes([0, 0, _IDX_UBYTE, data.ndim]) + struct.pack(f">{data.ndim}I", *data.shape)
    path.write_bytes(header + data.tobytes())


def write_synthetic_idx(directory: Path, samples: dict[str, int], seed: int = 0) -> Path:
    """Write a synthetic MNIST of MNIST's shapes in the torchvision layout (``DIR/MNIST/raw``,
    uncompressed, as torchvision leaves it after a download): for each split in ``samples``
    ("train", "test"), that many 28x28 uint8 images (:func:`synthetic_mnist`'s class prototypes
    plus noise, scaled to 0..255) and labels. Returns the ``raw`` directory."""
    raw = directory / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for offset, (split, n) in enumerate(samples.items()):
        data = synthetic_mnist(n, seed + offset)
        lo, hi = float(data.images.min()), float(data.images.max())
        pixels = np.rint((data.images - lo) / max(hi - lo, 1e-6) * 255.0)
        image_name, label_name = _FILES[split]
        write_idx(raw / image_name, pixels)
        write_idx(raw / label_name, data.labels)
    return raw
