"""The text of a function's signature without annotations, to compare with popxl 3.4's
recorded signatures (shared by the op tests)."""

from __future__ import annotations

import inspect
from collections.abc import Callable


def plain_signature(fn: Callable) -> str:
    """``str(inspect.signature(fn))`` with every parameter and return annotation removed."""
    sig = inspect.signature(fn)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))
