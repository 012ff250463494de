"""Names whose signature depends on the emulated popxl-addons generation (3.0 or 3.4).

A :class:`Generational` holds one implementation per generation and resolves to the one of
the generation selected *now* (``PROFCOMPARE_SIM_ADDONS``, see
``profcompare.backend.addons_generation``): as a module attribute through the module's
``__getattr__``, as a method or ``__init__`` through the descriptor protocol. Each
implementation carries the public name and the exact signature of that release, so a call the
release would refuse fails with the same TypeError, followed by a hint naming the other
generation's spelling; ``inspect.signature`` shows the release's parameters.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from profcompare.backend.addons_generation import ENV_VAR, GENERATIONS, current

__all__ = ["Generational", "OnlyIn", "current", "generational_getattr", "public"]


def public(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give an implementation the public name it has in popxl-addons (CPython names the
    function in argument errors: ``replica_sharded_spec() got an unexpected keyword ...``)."""

    def rename(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__name__ = name
        fn.__qualname__ = name
        return fn

    return rename


def _hinted(fn: Callable[..., Any], generation: str, hint: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TypeError as exc:
            tb = exc.__traceback__
            if tb is None or tb.tb_next is not None:
                raise  # raised inside the implementation, not by the argument binding
            raise TypeError(f"{exc} (popxl-addons {generation}: {hint}; the other generation is selected with "
                            f"{ENV_VAR} or --addons)") from None

    return call


class Generational:
    """One public name with an implementation per popxl-addons generation."""

    def __init__(self, name: str, impls: Mapping[str, Callable[..., Any]], hints: Mapping[str, str],
                 classmethod: bool = False) -> None:
        missing = set(GENERATIONS) - set(impls)
        if missing:
            raise ValueError(f"{name}: no implementation for generation(s) {sorted(missing)}")
        self.name = name
        self.classmethod = classmethod
        self.impls = {g: _hinted(public(name)(fn), g, hints[g]) for g, fn in impls.items()}

    def resolve(self, generation: str | None = None) -> Callable[..., Any]:
        """Return the implementation of ``generation`` (default: the selected one)."""
        return self.impls[generation or current()]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self.resolve())

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self.resolve().__doc__

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        fn = self.resolve()
        if self.classmethod:
            return fn.__get__(cls if cls is not None else type(obj))
        return fn if obj is None else fn.__get__(obj, cls)

    def __set_name__(self, owner: type, name: str) -> None:
        for fn in self.impls.values():
            fn.__qualname__ = fn.__wrapped__.__qualname__ = f"{owner.__name__}.{name}"  # type: ignore[attr-defined]


class OnlyIn:
    """A class attribute (method, property, ...) that exists in one popxl-addons generation only:
    under the other one, reading it raises AttributeError naming the generation that has it."""

    def __init__(self, generation: str, attribute: Any) -> None:
        if generation not in GENERATIONS:
            raise ValueError(f"unknown generation {generation!r}")
        self.generation = generation
        self.attribute = attribute
        self.name = getattr(attribute, "__name__", "?")
        self.__doc__ = getattr(attribute, "__doc__", None)

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner, self.name = owner.__name__, name

    def _check(self) -> None:
        if current() != self.generation:
            raise AttributeError(f"{getattr(self, 'owner', '?')}.{self.name} is only in popxl-addons "
                                 f"{self.generation} (select it with {ENV_VAR} or --addons)")

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        self._check()
        getter = getattr(self.attribute, "__get__", None)
        return self.attribute if getter is None else getter(obj, cls)

    def __set__(self, obj: Any, value: Any) -> None:
        self._check()
        setter = getattr(self.attribute, "__set__", None)
        if setter is None:
            raise AttributeError(f"{getattr(self, 'owner', '?')}.{self.name} cannot be set")
        setter(obj, value)


def generational_getattr(module_name: str, names: Mapping[str, Generational],
                         fallback: Callable[[str], Any] | None = None) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` resolving ``names`` for the selected generation; other
    names go to ``fallback`` (default: AttributeError)."""

    def __getattr__(name: str) -> Any:
        if name in names:
            return names[name].resolve()
        if fallback is not None:
            return fallback(name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__
