"""``init_remote(..., empty=True)`` (the T5 and GPT-J benchmarks build their weights so): the host
value is ``np.empty``'s uninitialised memory, the factory's data is not drawn, and the device
receives those bytes unchanged -- a NaN among them stays a NaN, as on an IPU, whose
``weightsFromHost`` copies the host bytes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons import remote
from profcompare.emulator.popxl_addons import variable_factory

# One 64-bit word shaped like an x86-64 user-space pointer, 0x00007F3A_51FF2470, read as four
# little-endian float16 halves (sign, 5 exponent bits, 10 mantissa bits):
#   0x2470: exponent 9, mantissa 0x070 = 112 -> 2**(9-15) * (1 + 112/1024) = 0.0173339844
#   0x51FF: exponent 20, mantissa 0x1FF = 511 -> 2**(20-15) * (1 + 511/1024) = 47.96875
#   0x7F3A: exponent 31, mantissa non-zero -> NaN (quiet: mantissa bit 9 set)
#   0x0000: +0.0
_WORD = np.array([0x00007F3A51FF2470], np.uint64)
_HALVES = np.array([0x2470, 0x51FF, 0x7F3A, 0x0000], np.uint16)


def test_the_pointer_word_reads_as_two_finite_halves_a_nan_and_a_zero() -> None:
    halves = _WORD.view(np.uint16)
    np.testing.assert_array_equal(halves, _HALVES)
    values = halves.view(np.float16)
    assert values[0] == np.float16(0.0173339844) and values[1] == np.float16(47.96875)
    assert np.isnan(values[2]) and values[3] == 0


def test_empty_init_remote_loads_the_uninitialised_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.4")
    counter = itertools.count(1)

    def data() -> np.ndarray:
        return np.full((2, 4), float(next(counter)), np.float16)

    class Scale(addons.Module):
        def build(self, x: popxl.Tensor) -> popxl.Tensor:
            return x * self.add_variable_input("w", data, popxl.float16)

    garbage = np.tile(_HALVES, 2).view(np.float16).reshape(2, 4)  # what np.empty may hand out

    class Numpy:  # numpy as variable_factory sees it, its np.empty handing out ``garbage``
        def __getattr__(self, name: str) -> object:
            return getattr(np, name)

        @staticmethod
        def empty(shape: tuple[int, ...], dtype: object) -> np.ndarray:
            return garbage.copy()

    monkeypatch.setattr(variable_factory, "np", Numpy())
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        facts, graph = Scale().create_graph(popxl.TensorSpec((2, 4), popxl.float16))
        drawn = next(counter)  # the calls create_graph made (one test call, one peeked value)
        buffers = addons.named_variable_buffers(facts)
        facts.init_remote(buffers, 0, "model", empty=True)
        loaded = remote.load_remote(buffers)
        scaled, = graph.bind(loaded).call(popxl.constant(np.ones((2, 4), np.float16)))
        streams = {}
        for name, t in {"w": loaded.w, "scaled": scaled}.items():
            streams[name] = popxl.d2h_stream(t.shape, t.dtype, name)
            ops.host_store(streams[name], t)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()
    assert next(counter) == drawn + 1  # empty=True drew nothing from the factory's data
    np.testing.assert_array_equal(out[streams["w"]].view(np.uint16), np.tile(_HALVES, 2).reshape(2, 4))
    scaled_bits = out[streams["scaled"]]
    # 1 * each half: the finite halves unchanged, the NaN a NaN
    np.testing.assert_array_equal(scaled_bits[:, [0, 1, 3]], np.array([[0.0173339844, 47.96875, 0.0]] * 2, np.float16))
    assert np.isnan(scaled_bits[:, 2]).all()
