"""Batch serialisation (``popxl_addons.transforms.batch_serialisation``): outside the emulated
subset. The names exist so that importing them works and calling them fails with one line
naming the API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from profcompare.emulator.popxl_addons._compat import not_supported

__all__ = ["batch_serialise", "batch_serialise_fwd_and_grad", "batch_serial_buffer", "RemoteHandle"]


@dataclass
class RemoteHandle:
    """A remote buffer, the row offset to use in it (an int or a function of the call's row
    offset) and the shard group of a replica-sharded buffer (None: not sharded)."""

    buffer: Any
    row_offset: Any = 0
    shard_group: Any = None


def batch_serialise(*args: Any, **kwargs: Any) -> Any:
    """Refused: batch serialisation is outside the emulated subset."""
    raise not_supported("transforms.batch_serialise")


def batch_serialise_fwd_and_grad(*args: Any, **kwargs: Any) -> Any:
    """Refused: batch serialisation is outside the emulated subset."""
    raise not_supported("transforms.batch_serialise_fwd_and_grad")


def batch_serial_buffer(*args: Any, **kwargs: Any) -> Any:
    """Refused: batch serialisation is outside the emulated subset."""
    raise not_supported("transforms.batch_serial_buffer")
