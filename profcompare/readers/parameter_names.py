"""Names of model parameters shared by the simulator's attribution and the Poplar reader's.

A repeated block's layers are parameters whose names differ only in an integer component
(``decoder.0.attention.qkv.weight``, ``decoder.1.attention.qkv.weight``); what belongs to all of
them at once belongs to their *family*, the name with those components replaced by ``*``.
"""

from __future__ import annotations

from collections.abc import Iterable


def family(names: Iterable[str]) -> str:
    """The parameter family of ``names``: the one name, or the dotted names with the components
    in which they differ replaced by ``*`` when every differing component is an integer
    (``layer.0.w``, ``layer.1.w`` -> ``layer.*.w``); "" when there is none (an empty name, names
    of different lengths, or differing in a non-integer component)."""
    unique = sorted(set(names))
    if not unique or "" in unique:
        return ""
    if len(unique) == 1:
        return unique[0]
    split = [n.split(".") for n in unique]
    if len({len(parts) for parts in split}) != 1:
        return ""
    out = []
    for components in zip(*split):
        if len(set(components)) == 1:
            out.append(components[0])
        elif all(c.isdigit() for c in components):
            out.append("*")
        else:
            return ""
    return ".".join(out)


__all__ = ["family"]
