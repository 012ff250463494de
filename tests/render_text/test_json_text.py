"""Indented JSON written faster is the same text ``json.dumps(..., indent=2)`` writes."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profcompare.render.json_text import dumps_indented

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                     st.text(max_size=8))
_KEYS = st.one_of(st.text(max_size=6), st.integers(-5, 5), st.booleans(), st.none(),
                  st.floats(allow_nan=False, allow_infinity=False))
_DOCUMENTS = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=5), st.tuples(inner, inner),
                                                             st.dictionaries(_KEYS, inner, max_size=5)), max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(_DOCUMENTS, st.booleans())
def test_the_same_text_as_json_dumps(document: object, ensure_ascii: bool) -> None:
    expected = json.dumps(document, indent=2, allow_nan=False, ensure_ascii=ensure_ascii)
    assert dumps_indented(document, ensure_ascii=ensure_ascii) == expected


def test_a_comparison_export_is_written_character_for_character(comparison) -> None:
    from profcompare.render.json_out import comparison_json

    document = comparison_json(comparison, top=None)
    for ensure_ascii in (True, False):
        expected = json.dumps(document, indent=2, allow_nan=False, ensure_ascii=ensure_ascii)
        assert dumps_indented(document, ensure_ascii=ensure_ascii) == expected


def test_what_json_refuses_is_refused() -> None:
    for bad in ([1.0, math.nan], {"a": [math.inf]}, {"a": {"b": -math.inf}}):
        with pytest.raises(ValueError):
            dumps_indented(bad)
    with pytest.raises(TypeError):
        dumps_indented({"a": [object()]})
    with pytest.raises(TypeError):
        dumps_indented({(1, 2): 3})
