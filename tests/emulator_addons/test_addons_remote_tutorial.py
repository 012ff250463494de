"""The tutorial's remote-variable example, in our own code: two entries of one remote buffer,
load, bind, add, update, store, reload. The tutorial states the expected values."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons import NamedTensors


@pytest.fixture(autouse=True)
def _threshold_api(monkeypatch: pytest.MonkeyPatch) -> None:
    # these tests are written in the 3.0 (threshold) API; tests/emulator_addons/test_addons_generations.py
    # covers 3.4
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")


class AddWeight(addons.Module):
    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        w = self.add_variable_input("weight", partial(np.ones, x.shape), x.dtype)
        return ops.add(w, x)


def test_two_entries_load_add_update_store_reload() -> None:
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        x = popxl.constant(np.ones((5,), np.float32))
        facts, graph = AddWeight().create_graph(x.spec)
        buffers = addons.named_variable_buffers(facts, entries=2, sharded_threshold=10)
        load_graph, names = addons.load_remote_graph(buffers, entries=2)
        store_graph = addons.store_remote_graph(buffers, entries=2)
        schedule = load_graph.print_schedule() + "\n" + store_graph.print_schedule()

        facts.init_remote(buffers, 0)
        facts.init_remote(buffers, 1)
        (w0,) = load_graph.call(0)
        (w1,) = load_graph.call(1)
        w0_initial, w1_initial = addons.host_store(w0), addons.host_store(w1)

        named0, named1 = NamedTensors.pack(names, (w0,)), NamedTensors.pack(names, (w1,))
        add0, add1 = graph.bind(named0), graph.bind(named1)
        (x0,) = add0.call(x)
        (x1,) = add1.call(x)
        x0_out, x1_out = addons.host_store(x0), addons.host_store(x1)

        w0 += popxl.constant(np.full((5,), 1.0, np.float32))
        w1 += popxl.constant(np.full((5,), 2.0, np.float32))
        store_graph.bind(named0).call(0)
        store_graph.bind(named1).call(1)

        (w0_again,) = load_graph.call(0)
        (x0_new,) = add0.call(x)
        (w1_again,) = load_graph.call(1)
        (x1_new,) = add1.call(x)
        streams = {
            "w0 after": addons.host_store(w0_again),
            "x0 new": addons.host_store(x0_new),
            "w1 after": addons.host_store(w1_again),
            "x1 new": addons.host_store(x1_new),
        }

    assert names == ["weight"]
    assert buffers.weight.entries == 2 and tuple(buffers.weight.tensor_shape) == (5,)
    assert "Graph : load_remote" in schedule and "Graph : store_remote" in schedule

    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()

    expected_initial = {w0_initial: 1, x0_out: 2, w1_initial: 1, x1_out: 2}
    for stream, value in expected_initial.items():
        np.testing.assert_array_equal(out[stream], np.full((5,), value, np.float32))
    # "now first layer has w = 2", "second layer has w = 3"; outputs 1+2 = 3 and 1+3 = 4
    expected_after = {"w0 after": 2, "x0 new": 3, "w1 after": 3, "x1 new": 4}
    for label, value in expected_after.items():
        np.testing.assert_array_equal(out[streams[label]], np.full((5,), value, np.float32), err_msg=label)
