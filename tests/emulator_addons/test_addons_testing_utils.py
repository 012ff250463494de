"""popxl_addons.testing_utils and NameScopeMeta on the simulator: run_module's outputs for a
module with variables and in-place arguments, ops_of_type, what 3.0 lacks, and the name scope
the metaclass gives a build."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl_addons import testing_utils
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors


class _Affine(addons.Module):
    def build(self, x: popxl.Tensor, shift: float) -> popxl.Tensor:
        w = self.add_variable_input("w", lambda: np.full(x.shape, 2.0, np.float32), popxl.float32)
        return x * w + shift


class _AddInPlace(addons.Module):
    def build(self, x: popxl.TensorByRef, a: popxl.Tensor) -> tuple[popxl.Tensor, popxl.Tensor]:
        popxl.ops.add_(x, a)
        return x, a * 3.0


def test_run_module_returns_each_output_with_written_weights() -> None:
    x = np.array([1.0, -2.0, 3.0], np.float32)
    (y,) = testing_utils.run_module(_Affine(), testing_utils.TensorInput(x), shift=0.5)
    np.testing.assert_array_equal(y, [2.5, -3.5, 6.5])  # initial w = 2
    weights = {"w": np.array([10.0, 0.0, -1.0], np.float32)}

    def mapping(variables: NamedTensors) -> dict[popxl.Tensor, np.ndarray]:
        return {variables.w: weights["w"]}

    (y,) = testing_utils.run_module(_Affine(), testing_utils.TensorInput(x, popxl.float32), 0.5, weights=mapping)
    np.testing.assert_array_equal(y, [10.5, 0.5, -2.5])
    assert y.dtype == np.float32


def test_run_module_outputs_the_in_place_result() -> None:
    x, a = np.array([1.0, 2.0], np.float32), np.array([0.25, 0.5], np.float32)
    out, tripled = testing_utils.run_module(_AddInPlace(), testing_utils.TensorInput(x),
                                            testing_utils.TensorInput(a))
    np.testing.assert_array_equal(out, [1.25, 2.5])
    np.testing.assert_array_equal(tripled, [0.75, 1.5])


def test_ops_of_type_counts_instances() -> None:
    assert testing_utils.ops_of_type([1, "a", 2.0, 3], int) == 2
    assert testing_utils.ops_of_type([], object) == 0


def test_30_has_only_ops_of_type(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")
    assert testing_utils.__all__ == ["ops_of_type"]
    for name in ("TensorInput", "run_module"):
        with pytest.raises(AttributeError, match="not in popxl-addons 3.0"):
            getattr(testing_utils, name)
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.4")
    assert testing_utils.__all__ == ["ops_of_type", "TensorInput", "run_module"]


def test_name_scope_meta_scopes_the_build() -> None:
    class Plain(metaclass=addons.NameScopeMeta):
        def build(self, x: popxl.Tensor) -> popxl.Tensor:
            return x + 1.0

    plain = Plain()
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.constant(np.zeros(2, np.float32), name="x")
        unscoped = plain.build(x)
        plain._name_scope = "block"
        scoped = plain.build(x)
    assert not unscoped.id.startswith("block/")
    assert scoped.id.startswith("block/")
    assert "NameScopeMeta" in addons.__all__
