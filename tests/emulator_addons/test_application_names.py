"""Names and rules Graphcore's LLM applications (graphcore/examples ``nlp/*/popxl``) rely on:
``popxl_addons.patterns``, ``GIT_COMMIT``, ``popxl.tensor.HostTensor``, ``host_load``'s dtype,
PopART's label rule of ``nll_loss_with_softmax_grad``."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons.ops import host_load
from profcompare.emulator.popxl_addons.patterns import apply_pre_alias_patterns


def test_pre_alias_patterns_check_popart_levels_and_record_them() -> None:
    ir = popxl.Ir()
    apply_pre_alias_patterns(ir, level="default")
    assert ir._pre_alias_patterns == "default"
    with pytest.raises(ValueError, match="unknown patterns level 'fast'"):
        apply_pre_alias_patterns(ir, level="fast")


def test_git_commit_and_host_tensor_exist() -> None:
    assert addons.GIT_COMMIT.startswith("profcompare-sim ")
    from profcompare.emulator.popxl.tensor import HostTensor

    assert np.ndarray in HostTensor.__args__


class _TorchLike:
    """What popxl's to_numpy recognises as a torch tensor (detach().numpy()), which np.asarray
    alone would not convert."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def detach(self) -> _TorchLike:
        return self

    def numpy(self) -> np.ndarray:
        return self.values

    def __array__(self, *args: object) -> np.ndarray:
        raise TypeError("converted without detach()")


def test_host_load_converts_to_its_dtype_and_names_the_stream() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        data, stream, loaded = host_load(_TorchLike(np.arange(6, dtype=np.float32).reshape(2, 3)), popxl.float16, "x")
        assert data.dtype == np.float16 and data.tolist() == [[0, 1, 2], [3, 4, 5]]
        assert stream.dtype == popxl.float16 and stream.shape == (2, 3) and loaded.dtype == popxl.float16
        assert stream.tensor_id == "x_stream" and loaded.name == "x_hostload"
        data, _, loaded = host_load([[1, 2], [3, 4]], name="y")  # without dtype: the data's own, 64 -> 32 bits
        assert data.dtype == np.int32 and loaded.dtype == popxl.int32


def test_nll_with_softmax_grad_takes_labels_with_one_element_per_row() -> None:
    # probs (2, 3, 4) uniform: 6 rows of 4 classes; labels (6, 1) as BERT passes them
    ir = popxl.Ir()
    with ir.main_graph:
        probs = popxl.variable(np.full((2, 3, 4), 0.25, np.float32))
        labels = popxl.variable(np.array([[0], [1], [2], [3], [0], [1]], np.int32))
        loss, dx = ops.nll_loss_with_softmax_grad(probs, labels, reduction="sum")
        ls, ds = popxl.d2h_stream(loss.shape, loss.dtype, "l"), popxl.d2h_stream(dx.shape, dx.dtype, "d")
        ops.host_store(ls, loss)
        ops.host_store(ds, dx)
        with pytest.raises(ValueError, match=r"must have 6 elements, one per row"):
            ops.nll_loss_with_softmax_grad(probs, popxl.variable(np.zeros(5, np.int32)))
    with popxl.Session(ir, "cpu") as session:
        out = session.run()
    # by hand: each row's loss is -log(0.25) = 1.3863, six rows summed = 8.3178; dx = p - onehot
    assert out[ls] == pytest.approx(-6 * np.log(0.25), rel=1e-4)
    expected = np.full((6, 4), 0.25, np.float32)
    expected[np.arange(6), [0, 1, 2, 3, 0, 1]] -= 1.0
    np.testing.assert_allclose(out[ds], expected.reshape(2, 3, 4), rtol=1e-6)
