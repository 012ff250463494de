"""DotTree / NamedTensors orders and operations that the MNIST programs rely on."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from profcompare.emulator.popxl_addons import NamedTensors
from profcompare.emulator.popxl_addons.dot_tree import DotTree


@dataclass(frozen=True)
class FakeTensor:
    name: str


def test_to_dict_keeps_insertion_order_and_unpack_sorts_by_key() -> None:
    tree = DotTree.from_dict({"fc2.weight": 1, "fc1.weight": 2, "fc1.bias": 3, "b": 4})
    assert list(tree.to_dict()) == ["fc2.weight", "fc1.weight", "fc1.bias", "b"]
    keys, values = tree.unpack()
    assert keys == ["b", "fc1.bias", "fc1.weight", "fc2.weight"]
    assert values == [4, 3, 2, 1]
    assert tree.fc1.bias == 3 and tree["fc1"]["weight"] == 2 and tree.get("fc2.weight") == 1


def test_pack_nests_dotted_keys_and_integer_keys_become_strings() -> None:
    tree = DotTree.pack(["a.b", "a.c", 0], [1, 2, 3])
    assert tree.a.to_dict() == {"b": 1, "c": 2}
    assert tree[0] == 3 and tree["0"] == 3 and tree[-1] == 3


def test_duplicate_and_invalid_keys_raise_without_changing_the_tree() -> None:
    tree = DotTree.from_dict({"a.b": 1})
    with pytest.raises(ValueError, match="already exists"):
        tree.insert("a.b", 2)
    with pytest.raises(ValueError, match="already exists"):
        tree.insert("a.c", 2)  # as popxl-addons 3.4: an existing nested tree needs overwrite too
    with pytest.raises(ValueError, match="identifier"):
        tree.insert("a.not valid", 2, overwrite=True)
    assert tree.to_dict() == {"a.b": 1}
    tree.insert("a.b", 5, overwrite=True)
    assert tree.a.b == 5


def test_to_mapping_pairs_common_dotted_keys() -> None:
    left = DotTree.from_dict({"x.w": "lw", "x.b": "lb", "only_left": "l"})
    right = DotTree.from_dict({"x.b": "rb", "x.w": "rw", "only_right": "r"})
    assert left.to_mapping(right) == {"lw": "rw", "lb": "rb"}


def test_copy_is_structural_and_map_keeps_keys() -> None:
    tree = DotTree.from_dict({"a.b": 1, "c": 2})
    clone = tree.copy()
    clone.insert("a.z", 9, overwrite=True)
    assert "z" not in tree.a.keys()
    assert tree.map(lambda v: v * 10).to_dict() == {"a.b": 10, "c": 20}


def test_missing_key_error_lists_available_keys() -> None:
    tree = DotTree.from_dict({"fc1.weight": 1})
    with pytest.raises(AttributeError, match="fc1"):
        tree.fc9  # noqa: B018


def test_named_tensors_tensors_sorted_by_tensor_name_not_key() -> None:
    # keys in one order, tensor names in another: .tensors follows the names
    named = NamedTensors.from_dict(
        {"z": FakeTensor("accum.fc1.bias"), "a": FakeTensor("mean_accum_counter"), "m": FakeTensor("accum.fc1.weight")}
    )
    assert [t.name for t in named.tensors] == ["accum.fc1.bias", "accum.fc1.weight", "mean_accum_counter"]
    assert list(named.named_tensors) == ["z", "a", "m"]


def test_named_tensors_remap_and_missing_entries() -> None:
    a, b = FakeTensor("a"), FakeTensor("b")
    named = NamedTensors.from_dict({"x.a": a, "x.b": b})
    remapped = named.remap({a: FakeTensor("A"), b: FakeTensor("B")})
    assert remapped.x.a.name == "A" and remapped.x.b.name == "B"
    with pytest.raises(KeyError, match="x.b"):
        named.remap({a: FakeTensor("A")})


def test_filter_keys_pop_and_clear() -> None:
    tree = DotTree.from_dict({"a.b.c": 1, "a.b.d": 2, "e.0": 3, "f": 4})
    kept = tree.filter_keys(["a.b.c", "e"])
    assert kept.to_dict() == {"a.b.c": 1, "e.0": 3}
    with pytest.raises(ValueError, match="duplicate"):
        tree.filter_keys(["f", "f"])
    with pytest.raises(KeyError):
        tree.filter_keys(["nope"])
    assert tree.pop("a.b.d") == 2 and tree.to_dict() == {"a.b.c": 1, "e.0": 3, "f": 4}
    sub = tree.a
    tree._clear()
    assert tree.to_dict() == {} and tree.a is sub  # nested nodes stay, leaves go


def test_update_replaces_top_level_entries_and_merge_needs_overwrite() -> None:
    tree = DotTree.from_dict({"a.x": 1, "a.y": 2})
    with pytest.raises(ValueError, match="already exists"):
        tree.update(DotTree.from_dict({"a.z": 3}))
    tree.update(DotTree.from_dict({"a.z": 3}), overwrite=True)
    assert tree.to_dict() == {"a.z": 3}
    tree.insert("a.w", 4, overwrite=True)
    assert tree.to_dict() == {"a.z": 3, "a.w": 4}
