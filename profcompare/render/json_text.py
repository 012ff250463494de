"""Indented JSON text, the same characters as ``json.dumps(value, indent=2, allow_nan=False)``,
written faster.

With ``indent`` the standard library encodes in Python, one generator step per value: a
comparison's complete JSON export (every variable and liveness step, about 1.5 MB) took about
50 ms. Here the containers holding only scalars (the rows of tables, which are nearly all of
it) are encoded by the library's C encoder in one call each, with the separators of their
depth; only the few containers above them are walked in Python. tests/render/test_json_text.py
checks the text against ``json.dumps`` on documents of every shape.

A :class:`Prerendered` value (a large table's rows, :mod:`profcompare.render.json_rows`) writes
its own text, the characters ``json.dumps`` would write for the value it stands for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import Any

_INDENT = 2
_SCALARS = (str, int, float, bool, type(None))


class Prerendered:
    """A value that writes its own indented JSON text (see :meth:`pieces`)."""

    def pieces(self, level: int, string: Callable[[str], str]) -> Iterable[str]:
        """The value's text at nesting ``level`` in consecutive pieces, strings quoted by ``string``."""
        raise NotImplementedError


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


@cache
def _leaf_encoder(level: int, ensure_ascii: bool) -> Callable[[Any], str]:
    """value -> its JSON text, a container's items separated as ``indent`` separates them at
    ``level`` (the library's C encoder, made once per level, when there is one)."""
    separator = ",\n" + " " * (_INDENT * level)
    c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if c_make_encoder is None:  # pragma: no cover - CPython has it
        encoder = json.JSONEncoder(ensure_ascii=ensure_ascii, allow_nan=False, check_circular=False,
                                   separators=(separator, ": "))
        return encoder.encode
    string = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    chunks = c_make_encoder(None, _refuse, string, None, ": ", separator, False, False, False)
    return lambda value: "".join(chunks(value, 0))


def _key(key: Any) -> Any:
    """A dictionary key as ``json`` writes it (strings; numbers, booleans and None as text)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, float):
        return json.dumps(key, allow_nan=False)
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def dumps_indented(value: Any, *, ensure_ascii: bool = True) -> str:
    """``json.dumps(value, indent=2, allow_nan=False, ensure_ascii=ensure_ascii)``, character for
    character (dictionaries, lists and tuples of str, int, float, bool and None); raises
    ValueError for NaN or infinity and TypeError for other types, as ``json.dumps`` does."""
    return "".join(indented_parts(value, ensure_ascii=ensure_ascii))


def indented_parts(value: Any, *, ensure_ascii: bool = True) -> Iterator[str]:
    """:func:`dumps_indented`'s text in consecutive parts. The document is walked first (so a
    value JSON refuses is refused before any part is given); a :class:`Prerendered` value's
    pieces are made as they are taken, so a large document is written piece by piece, never
    held whole."""
    parts: list[str | Iterable[str]] = []
    string = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring

    def walk(v: Any, level: int) -> None:
        if isinstance(v, Prerendered):
            parts.append(v.pieces(level, string))
        elif isinstance(v, dict):
            if not v:
                parts.append("{}")
                return
            inner = level + 1
            if all(type(x) in _SCALARS for x in v.values()):
                # keys all plain strings (table rows): the dictionary as it is
                keyed = v if all(type(k) is str for k in v) else {_key(k): x for k, x in v.items()}
                if len(keyed) == len(v):  # (two keys writing the same text: both written, below)
                    text = _leaf_encoder(inner, ensure_ascii)(keyed)
                    parts.append("{\n" + " " * (_INDENT * inner) + text[1:-1] + "\n" + " " * (_INDENT * level) + "}")
                    return
            pad = "\n" + " " * (_INDENT * inner)
            parts.append("{")
            first = True
            for k, x in v.items():
                parts.append(pad if first else "," + pad)
                first = False
                parts.append(string(_key(k)) + ": ")
                walk(x, inner)
            parts.append("\n" + " " * (_INDENT * level) + "}")
        elif isinstance(v, (list, tuple)):
            if not v:
                parts.append("[]")
                return
            inner = level + 1
            if all(type(x) in _SCALARS for x in v):
                text = _leaf_encoder(inner, ensure_ascii)(list(v))
                parts.append("[\n" + " " * (_INDENT * inner) + text[1:-1] + "\n" + " " * (_INDENT * level) + "]")
                return
            pad = "\n" + " " * (_INDENT * inner)
            parts.append("[")
            for index, x in enumerate(v):
                parts.append(pad if index == 0 else "," + pad)
                walk(x, inner)
            parts.append("\n" + " " * (_INDENT * level) + "]")
        else:
            parts.append(_leaf_encoder(level, ensure_ascii)(v))

    walk(value, 0)
    return _flat(parts)


def _flat(parts: list[str | Iterable[str]]) -> Iterator[str]:
    for part in parts:
        if isinstance(part, str):
            yield part
        else:
            yield from part


__all__ = ["Prerendered", "dumps_indented", "indented_parts"]
