"""DotTree: a tree of named leaves addressed with dotted keys (``fc1.weight``).

Orders matter to the programs built on it and follow popxl-addons:
``to_dict`` flattens in insertion order, ``unpack`` returns keys and values sorted by key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

L = TypeVar("L")
V = TypeVar("V")
T = TypeVar("T", bound="DotTree[Any]")


def _normalise_key(key: str | int) -> str:
    if isinstance(key, bool):
        raise ValueError(f"invalid DotTree key {key!r}")
    if isinstance(key, int):
        if key < 0:
            raise ValueError(f"numerical DotTree key cannot be negative: {key}")
        return str(key)
    return key


def _check_part(part: str) -> None:
    if not (part.isnumeric() or part.isidentifier()):
        raise ValueError(f"DotTree key part {part!r} is neither a python identifier nor a number")


def to_mapping(keys: DotTree[L], values: DotTree[V]) -> dict[L, V]:
    """Return ``{keys_leaf: values_leaf}`` for every dotted key the two trees share
    (in the insertion order of ``keys``)."""
    value_dict = values.to_dict()
    return {leaf: value_dict[name] for name, leaf in keys.to_dict().items() if name in value_dict}


class DotTree(Generic[L]):
    """A tree of leaves addressed by dotted keys; nested nodes are DotTrees of the same class.

    Access by attribute (``tree.fc1.weight``) or item (``tree["fc1"]``, ``tree[0]``); integer keys
    are stored as strings.
    """

    def __init__(self, **kwargs: Any) -> None:
        object.__setattr__(self, "_map", {})
        for key, value in kwargs.items():
            self.insert(key, value)

    # ----- access -----
    def __getattr__(self, key: str) -> Any:
        if key.startswith("__") or key == "_map":
            raise AttributeError(key)
        try:
            return self.get(key)
        except KeyError:
            raise AttributeError(
                f"{type(self).__name__} has no key {key!r}; keys: {', '.join(self._map) or '(none)'}"
            ) from None

    def __getitem__(self, key: str | int) -> Any:
        return self.get(key)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, (str, int)):
            return False
        try:
            self.get(key)
        except KeyError:
            return False
        return True

    def get(self, key: str | int) -> Any:
        """Return the leaf or subtree at ``key`` (dotted keys descend; a negative int counts back
        from the largest numeric key). Raises KeyError naming the available keys."""
        if isinstance(key, int) and not isinstance(key, bool) and key < 0:
            numeric = [int(k) for k in self._map if k.isnumeric()]
            if not numeric or str(max(numeric) + 1 + key) not in self._map:
                raise KeyError(f"numerical key {key} does not exist; keys: {list(self._map)}")
            key = max(numeric) + 1 + key
        key = _normalise_key(key)
        head, _, rest = key.partition(".")
        if head not in self._map:
            raise KeyError(f"key {key!r} does not exist; keys: {list(self._map)}")
        node = self._map[head]
        if rest:
            if not isinstance(node, DotTree):
                raise KeyError(f"key {key!r} does not exist: {head!r} is a leaf")
            return node.get(rest)
        return node

    # ----- mutation -----
    def insert(self, key: str | int, value: Any, overwrite: bool = False) -> None:
        """Insert ``value`` at ``key``; dots create nested trees. Raises ValueError when any part
        of the key already exists (unless ``overwrite``, which merges nested trees and replaces
        leaves) or is neither an identifier nor a number; a failed insert changes nothing."""
        key = _normalise_key(key)
        head, _, rest = key.partition(".")
        _check_part(head)
        if head in self._map and not overwrite:
            raise ValueError(f"DotTree key {head!r} already exists")
        if not rest:
            self._map[head] = value
            return
        existing = self._map.get(head)
        # build on a copy so that a failing nested insert leaves this tree unchanged
        nested = existing.copy() if isinstance(existing, type(self)) else type(self)()
        nested.insert(rest, value, overwrite)
        self._map[head] = nested

    def update(self, other: DotTree[L], overwrite: bool = False) -> None:
        """Insert every top-level entry of ``other`` (a copy of it): with ``overwrite`` an entry
        replaces ours of the same key, nested trees included."""
        for key, value in other.copy()._map.items():
            self.insert(key, value, overwrite)

    def pop(self, key: str | int) -> Any:
        """Remove and return the entry at ``key`` (dotted keys descend)."""
        head, _, rest = _normalise_key(key).partition(".")
        if rest:
            return self.get(head).pop(rest)
        return self._map.pop(head)

    def filter_keys(self: T, keys: Iterable[str | int]) -> T:
        """Return a new tree holding only the entries at ``keys`` (dotted keys keep their
        nesting). Raises ValueError for a repeated key and KeyError for a missing one."""
        keys = list(keys)
        if len(keys) != len(set(keys)):
            raise ValueError("`keys` cannot contain duplicate values.")
        tree = type(self)()
        for key in keys:
            tree.insert(key, self.get(key), overwrite=True)
        return tree

    def _clear(self) -> None:
        """Remove every leaf but keep nested nodes (so grafted subtrees stay shared)."""
        self._clear_leaves()

    def _clear_leaves(self) -> None:
        """Remove every leaf but keep nested nodes (so grafted subtrees stay shared)."""
        for key, value in list(self._map.items()):
            if isinstance(value, DotTree):
                value._clear_leaves()
            else:
                del self._map[key]

    # ----- views -----
    def keys(self) -> list[str]:
        """Return the top-level keys in insertion order."""
        return list(self._map)

    def keys_flat(self) -> list[str]:
        """Return all dotted leaf keys in insertion order."""
        return list(self.to_dict())

    def values(self) -> list[Any]:
        """Return the top-level values in insertion order."""
        return list(self._map.values())

    def values_flat(self) -> list[L]:
        """Return all leaves in insertion order."""
        return list(self.to_dict().values())

    def len(self) -> int:
        """Return the number of top-level entries."""
        return len(self._map)

    def len_flat(self) -> int:
        """Return the number of leaves."""
        return len(self.to_dict())

    def to_dict(self) -> dict[str, L]:
        """Return ``{dotted key: leaf}`` in insertion order."""
        out: dict[str, L] = {}
        for key, value in self._map.items():
            if isinstance(value, DotTree):
                for sub, leaf in value.to_dict().items():
                    out[f"{key}.{sub}"] = leaf
            else:
                out[key] = value
        return out

    def to_mapping(self, values: DotTree[V]) -> dict[L, V]:
        """Return ``{self_leaf: values_leaf}`` for the dotted keys both trees have."""
        return to_mapping(self, values)

    def unpack(self) -> tuple[list[str], list[L]]:
        """Return (keys, values), both sorted by dotted key."""
        items = sorted(self.to_dict().items(), key=lambda kv: kv[0])
        return [k for k, _ in items], [v for _, v in items]

    @classmethod
    def from_dict(cls: type[T], d: Mapping[str, Any] | Mapping[int, Any] | Mapping[str | int, Any]) -> T:
        """Return a tree built from ``{dotted key: leaf}`` (dots nest; keys sharing a prefix share
        the nested tree). Raises ValueError for a key given twice."""
        tree = cls()
        for key, value in d.items():
            *parents, last = _normalise_key(key).split(".")
            node = tree
            for part in parents:
                child = node._map.get(part)
                if not isinstance(child, DotTree):
                    child = cls()
                    node.insert(part, child)
                node = child
            node.insert(last, value)
        return tree

    @classmethod
    def pack(cls: type[T], keys: Iterable[str | int], values: Iterable[Any]) -> T:
        """Return ``from_dict(dict(zip(keys, values)))``."""
        return cls.from_dict(dict(zip(keys, values)))

    def copy(self: T) -> T:
        """Return a copy of the tree structure (leaves are shared, not copied)."""
        tree = type(self)()
        for key, value in self._map.items():
            tree._map[key] = value.copy() if isinstance(value, DotTree) else value
        return tree

    def map(self: T, fn: Callable[[Any], Any]) -> T:
        """Return a new tree with ``fn`` applied to every leaf (same keys)."""
        return self.from_dict({k: fn(v) for k, v in self.to_dict().items()})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_dict()!r})"
