"""The registry behind the display and plot methods of :class:`~profcompare.model.Report`,
:class:`~profcompare.comparison.Comparison` and :class:`~profcompare.advisor.advisor.AdviseResult`.

A notebook expects ``report._repr_html_()``, ``report.plot_liveness()`` or
``diff.plot_ledger()`` on the objects themselves, but the objects live below the render layer
and never import it (layers import downward only). Each such method looks its implementation
up here by name (``"Report.plot_liveness"``); the render layer registers the implementations
(:func:`profcompare.render.notebook.register_presenters`), the way pandas lets a plotting
backend register itself. ``import profcompare`` adds a loader that does that registration the
first time a method is called, so importing the package does not import the renderers (nor
pandas or matplotlib) before they are needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from profcompare.errors import ProfcompareError

#: The methods that are looked up here, per class: every one has an implementation once the
#: render layer has registered.
METHODS: dict[str, tuple[str, ...]] = {
    "Report": ("_repr_html_", "plot_memory_by_category", "plot_liveness", "plot_tiles", "plot_trace"),
    "Comparison": ("_repr_html_", "__repr__", "plot_ledger", "plot_lifetimes", "plot_liveness", "plot_memory_by_category", "plot_tiles",
                   "plot_trace"),
    "AdviseResult": ("_repr_html_",),
}

#: Methods of the model computed by the analysis layer, which the model does not import either:
#: the analysis registers them (:func:`profcompare.analysis.ledger.register_report_methods`).
DERIVED: dict[str, tuple[str, ...]] = {
    "Report": ("ledger", "live_at_peak", "tile_detail"),
    "Comparison": ("tile_detail",),
}

_IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {}
_LOADERS: list[Callable[[], None]] = []


def register(name: str, implementation: Callable[..., Any]) -> None:
    """Make ``implementation(obj)`` the body of method ``name`` (``"<Class>.<method>"``, one of
    :data:`METHODS` or :data:`DERIVED`); registering a name again replaces its implementation."""
    owner, _, method = name.partition(".")
    if method not in METHODS.get(owner, ()) and method not in DERIVED.get(owner, ()):
        raise ProfcompareError(f"no presenter method {name!r}; methods are {', '.join(names())}")
    _IMPLEMENTATIONS[name] = implementation


def register_loader(loader: Callable[[], None]) -> None:
    """Add ``loader``, called the first time a method has no implementation yet (and dropped
    once it has run without error); it is expected to :func:`register` them."""
    _LOADERS.append(loader)


def names() -> tuple[str, ...]:
    """Every method name of :data:`METHODS`, as ``"<Class>.<method>"``."""
    return tuple(f"{owner}.{method}" for owner, methods in METHODS.items() for method in methods)


def present(name: str, obj: Any, *args: Any, **kwargs: Any) -> Any:
    """Call the implementation of method ``name`` on ``obj`` (with the method's other
    arguments) and return what it returns.

    Runs the pending loaders first when ``name`` has no implementation yet. Raises
    ProfcompareError when there is still none (the render layer was never registered).
    """
    while name not in _IMPLEMENTATIONS and _LOADERS:
        loader = _LOADERS[0]
        loader()  # a loader that fails stays pending: the next call shows its error again
        _LOADERS.remove(loader)
    implementation = _IMPLEMENTATIONS.get(name)
    if implementation is None:
        raise ProfcompareError(
            f"{name} is not available: the render layer has not registered it "
            "(import profcompare, or call profcompare.render.notebook.register_presenters())"
        )
    return implementation(obj, *args, **kwargs)


__all__ = ["DERIVED", "METHODS", "names", "present", "register", "register_loader"]
