"""InputStreams / OutputStreams: ordered collections of popxl host streams created from
``name=(shape, dtype)`` keyword arguments (``popxl_addons.streams``; both generations).

A collection is an ordered dict keyed by stream name that also answers attribute access
(``inputs.x``) and integer or slice indexing in creation order; iterating yields the streams
(not the names), as in popxl-addons.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from profcompare.emulator.popxl_addons._compat import popxl

__all__ = ["InputStreams", "OutputStreams"]


class _Streams(OrderedDict):  # type: ignore[type-arg]
    """Streams by name; subclasses set ``stream_init`` (popxl.h2d_stream or popxl.d2h_stream)."""

    stream_init: Callable[..., Any]

    def __init__(self, **streams: tuple[tuple[int, ...], Any]) -> None:
        super().__init__()
        for name, (shape, dtype) in streams.items():
            self[name] = self.stream_init(shape=shape, dtype=dtype, name=name)

    @classmethod
    def from_streams(cls, streams: Iterable[Any]) -> _Streams:
        """Return a collection of existing streams, keyed by their tensor ids."""
        collection = cls()
        for stream in streams:
            collection[stream.tensor_id] = stream
        return collection

    def _keys_listing(self) -> str:
        return ", ".join(super().keys()) or "(none)"

    def __getattr__(self, key: str) -> Any:
        if key.startswith("__"):
            raise AttributeError(key)
        try:
            return OrderedDict.__getitem__(self, key)
        except KeyError:
            raise AttributeError(f"No attribute {key!r}. Available keys: {self._keys_listing()}") from None

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, (int, slice)):
            return list(self.values())[key]
        try:
            return OrderedDict.__getitem__(self, key)
        except KeyError:
            raise KeyError(f"No key {key!r}. Available keys: {self._keys_listing()}") from None

    def __iter__(self) -> Iterator[Any]:
        return iter(list(OrderedDict.values(self)))


class InputStreams(_Streams):
    """Host-to-device streams: ``InputStreams(x=((2, 4), popxl.float32))`` then
    ``ops.host_load(inputs.x)``."""

    stream_init = staticmethod(popxl.h2d_stream)


class OutputStreams(_Streams):
    """Device-to-host streams: ``OutputStreams(y=((2, 4), popxl.float32))`` then
    ``ops.host_store(outputs.y, y)``."""

    stream_init = staticmethod(popxl.d2h_stream)
