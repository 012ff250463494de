"""Small helpers of popxl-addons (``popxl_addons.utils``): ``timer``, an ``OrderedDict`` with
index access, ``WeightsDict`` (variables to host arrays, checked), and the helpers its own
modules use (``overrides``, ``duplicate_items``, ``suffix_graph_name``, ``null_context``)."""

from __future__ import annotations

import collections
import contextlib
import logging
import time
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons.transforms.recomputation import suffix_graph_name  # noqa: F401 -- importable here, as in popxl-addons

__all__ = ["timer", "OrderedDict", "WeightsDict"]

_LOG = logging.getLogger(__name__)


@contextlib.contextmanager
def null_context() -> Iterator[None]:
    """A context that does nothing."""
    yield


@contextlib.contextmanager
def timer(title: str | None = None, log_to_wandb: bool = True) -> Iterator[None]:
    """Log (at INFO) the start of the block and its duration in minutes; with
    ``log_to_wandb`` and a title, also record it in the run summary of Weights & Biases when
    ``wandb`` is installed and a run is active."""
    start = time.perf_counter()
    _LOG.info(f"Starting {title or ''}")
    yield
    minutes = (time.perf_counter() - start) / 60
    _LOG.info(f"{title + ' duration' if title else 'Duration'}: {minutes:.2f} mins")
    if log_to_wandb and title:
        try:
            import wandb  # type: ignore[import-not-found]
        except ImportError:
            return
        if wandb.run is not None:
            wandb.run.summary[title.lower().replace(" ", "_") + "_mins"] = minutes


class OrderedDict(collections.OrderedDict):  # type: ignore[type-arg]
    """An OrderedDict with ``idx(i)`` (the i-th value) and one ``key: value`` per line in its repr."""

    def idx(self, idx: int) -> Any:
        """Return the value at position ``idx``."""
        return list(self.values())[idx]

    def __repr__(self) -> str:
        body = "".join(f"{k}: {v},\n" for k, v in self.items())
        return "{\n" + body + "}" if self else "{}"


class WeightsDict(MutableMapping):  # type: ignore[type-arg]
    """Variables to host arrays; setting an item checks the array's dtype and shape against the
    variable's (``shape_on_host``). Raises ValueError on a mismatch."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.dict: dict[Any, np.ndarray] = {}
        if args or kwargs:
            self.update(*args, **kwargs)

    def __getitem__(self, key: Any) -> np.ndarray:
        return self.dict[key]

    def __setitem__(self, key: Any, value: np.ndarray) -> None:
        value_dtype = popxl.dtype.as_dtype(value.dtype)
        if key.dtype != value_dtype:
            raise ValueError(f"{key}: tensor and weight dtypes do not equal {key.dtype} != {value_dtype}")
        if tuple(key.shape_on_host) != tuple(value.shape):
            raise ValueError(f"{key}: tensor and weight shapes do not equal {key.shape_on_host} != {value.shape}")
        self.dict[key] = value

    def __delitem__(self, key: Any) -> None:
        del self.dict[key]

    def __len__(self) -> int:
        return len(self.dict)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.dict)


def overrides(cls: type, base_cls: type, method: str) -> bool:
    """Whether ``cls`` overrides ``method`` of ``base_cls``."""
    return getattr(cls, method) != getattr(base_cls, method)


def duplicate_items(iterable: Iterable[Any]) -> list[Any]:
    """Return the items seen more than once, in first-seen order."""
    counts = collections.Counter(iterable)
    return [item for item, n in counts.items() if n > 1]


