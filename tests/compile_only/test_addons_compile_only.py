"""Compile-only execution of popxl-addons Module-based training programs: the report of the
numeric run, while no init function is called and no numeric kernel runs."""

from __future__ import annotations

import json
import tracemalloc
from functools import partial
from pathlib import Path

import numpy as np
import pandas.testing as pdt
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons.init_spec import spec_without_calling
from profcompare.readers.store import read_report
from profcompare.runner import resolve_config
from workloads import find_variant

from .forbid import forbid_numeric_execution

TABLES = ("tiles", "categories", "variables", "liveness", "code", "execution", "remote_buffers")


@pytest.fixture(autouse=True)
def _generation_34(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.4")


def _mode(monkeypatch: pytest.MonkeyPatch, directory: Path, compile_only: bool) -> None:
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps({"autoReport.all": "true",
                                                            "autoReport.directory": str(directory)}))
    if compile_only:
        monkeypatch.setenv("PROFCOMPARE_SIM_EXECUTION", "compile-only")
    else:
        monkeypatch.delenv("PROFCOMPARE_SIM_EXECUTION", raising=False)


class CountingInit:
    """Init functions that count their calls (popxl-addons programs pass them as partials)."""

    def __init__(self) -> None:
        self.calls = 0
        self.rng = np.random.default_rng(0)

    def normal(self, loc: float, scale: float, size: tuple[int, ...]) -> np.ndarray:
        self.calls += 1
        return self.rng.normal(loc, scale, size)

    def zeros(self, shape: tuple[int, ...]) -> np.ndarray:
        self.calls += 1
        return np.zeros(shape)


class Linear(addons.Module):
    def __init__(self, init: CountingInit, features: int) -> None:
        super().__init__()
        self.init, self.features = init, features

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        w = self.add_variable_input("weight", partial(self.init.normal, 0, 0.02, (x.shape[-1], self.features)),
                                    x.dtype)
        b = self.add_variable_input("bias", partial(self.init.zeros, shape=(self.features,)), x.dtype,
                                    replica_grouping=popxl.gcg().ir.replica_grouping(group_size=1))
        return ops.gelu(ops.matmul(x, w) + b)


def _training_program(init: CountingInit):
    """Two layers from one Module (factories init'ed twice), gradients accumulated over two
    micro-batches, a momentum held in a remote buffer created with init_remote(empty=True)."""
    ir = popxl.Ir()
    ir.replication_factor = 2
    ir.num_host_transfers = 2
    with ir.main_graph:
        x_stream = popxl.h2d_stream((4, 16), popxl.float32, "x")
        out_stream = popxl.d2h_stream((4, 16), popxl.float32, "out")
        facts, graph = Linear(init, 16).create_graph(popxl.TensorSpec((4, 16), popxl.float32))
        layers = [facts.init(f"layer{i}") for i in range(2)]
        grad_facts, grad_graph = addons.autodiff_with_accumulation(graph, graph.args.tensors,
                                                                   grads_required=[graph.graph.inputs[0]])
        accums = [grad_facts.init(f"grads{i}") for i in range(2)]
        buffers = addons.named_variable_buffers(facts, entries=2, shard_over_dict=False)
        facts.init_remote(buffers, 0, "momentum0", empty=True)
        facts.init_remote(buffers, 1, "momentum1", empty=True)
        load, names = addons.load_remote_graph(buffers, entries=2)
        store = addons.store_remote_graph(buffers, entries=2)
        with popxl.in_sequence(True):
            for _ in range(2):
                h = ops.host_load(x_stream, "x")
                infos = []
                for layer in layers:
                    info = graph.bind(layer).call_with_info(h)
                    infos.append(info)
                    h = info.outputs[0]
                ops.host_store(out_stream, h)
                grad = popxl.constant(np.ones((4, 16), np.float32))
                for i in reversed(range(2)):
                    activations = grad_graph.grad_graph_info.inputs_dict(infos[i])
                    (grad,) = grad_graph.bind(accums[i]).call(grad, args=activations)
            for i, layer in enumerate(layers):
                momentum = addons.NamedTensors.pack(names, load.call(i))
                for key, var in layer.named_tensors.items():
                    m = momentum.get(key)
                    ops.var_updates.accumulate_(m, accums[i].get("accum." + key), 0.9)
                    ops.scaled_add_(var, m, b=-0.01)
                store.bind(momentum).call(i)
    return ir, x_stream, out_stream


def _run_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compile_only: bool):
    directory = tmp_path / ("compile-only" if compile_only else "numeric")
    _mode(monkeypatch, directory, compile_only)
    init = CountingInit()
    ir, x_stream, out_stream = _training_program(init)
    session = popxl.Session(ir, "ipu_model")
    with session:
        outputs = [session.run({x_stream: np.ones((2, 2, 4, 16), np.float32)}) for _ in range(2)]
    return read_report(directory / "profile.sqlite"), init.calls, outputs[-1][out_stream]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the numeric run's momenta start uninitialised (empty=True)
def test_module_training_compile_only_calls_no_init_function_and_reports_as_numeric(tmp_path, monkeypatch):
    numeric, numeric_calls, numeric_out = _run_training(tmp_path, monkeypatch, compile_only=False)
    # numeric: per factory a test call and a peek at construction, then per init one value per
    # replica group, the first being the peeked one: weight 2 + (0 + 1), bias (2 groups) 2 + (1 + 2)
    assert numeric_calls == 8 and numeric_out.any()
    forbid_numeric_execution(monkeypatch)
    abstract, abstract_calls, abstract_out = _run_training(tmp_path, monkeypatch, compile_only=True)
    assert abstract_calls == 0
    assert abstract_out.shape == (2, 2, 4, 16) and abstract_out.dtype == np.float32 and not abstract_out.any()
    assert abstract.meta.execution == "compile-only" and len(abstract.remote_buffers) == 2  # weight and bias
    for table in TABLES:
        pdt.assert_frame_equal(getattr(abstract, table), getattr(numeric, table), obj=table)


@pytest.mark.parametrize("variant", ["onchip", "offchip-sharded"])
def test_mnist_workload_compile_only_reports_as_numeric(tmp_path, monkeypatch, variant):
    workload = find_variant(variant)
    config = resolve_config(workload, {"replicas": 2, "grad_accum": 2, "micro_batch": 4, "hidden": 64,
                                       "layers": 1, "steps": 2, "sharded_threshold": 512})
    reports = {}
    losses = {}
    for compile_only in (False, True):
        if compile_only:
            forbid_numeric_execution(monkeypatch)
        directory = tmp_path / str(compile_only)
        _mode(monkeypatch, directory, compile_only)
        losses[compile_only] = workload.run(variant, config).losses
        reports[compile_only] = read_report(directory / "profile.sqlite")
    assert all(loss > 0 for loss in losses[False]) and losses[True] == (0.0, 0.0)
    for table in TABLES:
        pdt.assert_frame_equal(getattr(reports[True], table), getattr(reports[False], table), obj=table)


def test_a_callable_whose_shape_cannot_be_read_is_called_once_and_dropped(monkeypatch):
    monkeypatch.setenv("PROFCOMPARE_SIM_EXECUTION", "compile-only")
    init = CountingInit()
    ir = popxl.Ir()
    ir.replication_factor = 4
    with ir.main_graph:
        factory = addons.VariableFactory(lambda: init.zeros((256, 256)), popxl.float16, "w",
                                         replica_grouping=ir.replica_grouping(group_size=1))
        tracemalloc.start()
        try:
            v = factory.create_tensor()
            w = factory.create_tensor("w2", empty=True)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert init.calls == 1 and factory.shape == (256, 256) and factory.dtype == popxl.float16
    assert v.shape_on_host == w.shape_on_host == (4, 256, 256)
    assert peak < 64 << 10  # no value per group (4 x 128 KiB), no copy


def test_a_memmap_dir_creates_no_file_in_compile_only(tmp_path, monkeypatch):
    monkeypatch.setenv("PROFCOMPARE_SIM_EXECUTION", "compile-only")
    init = CountingInit()
    ir = popxl.Ir()
    with ir.main_graph:
        facts, _ = Linear(init, 8).create_graph(popxl.TensorSpec((2, 4), popxl.float32))
        tensors = facts.init(memmap_dir=str(tmp_path / "weights"))
    assert init.calls == 0 and not (tmp_path / "weights").exists()
    assert tensors.weight.shape == (4, 8) and tensors.bias.shape == (8,)


@pytest.mark.parametrize(("data_iter", "dtype", "spec"), [
    (partial(np.random.normal, 0, 0.02, (3, 4)), None, ((3, 4), np.dtype(np.float64))),
    (partial(np.random.default_rng(0).normal, 0, 1, size=7), popxl.float16, ((7,), popxl.float16)),
    (partial(np.random.normal, 0, 1), None, ((), np.dtype(np.float64))),
    (partial(np.zeros, 5), None, ((5,), np.dtype(np.float64))),
    (partial(np.ones, (2, 3), np.float16), None, ((2, 3), np.dtype(np.float16))),
    (partial(np.zeros, ()), popxl.float32, ((), popxl.float32)),
    (partial(CountingInit().normal, 0, 1, (6, 2)), popxl.float32, ((6, 2), popxl.float32)),
    (partial(CountingInit().normal, 0, 1, (6, 2)), None, None),  # dtype only known by calling
    (partial(np.full, (2,), 3.0), None, None),
    (lambda: np.zeros(3), popxl.float32, None),
    (np.zeros, popxl.float32, None),
])
def test_spec_without_calling(data_iter, dtype, spec):
    assert spec_without_calling(data_iter, dtype) == spec


class _Distribution:
    """Stands for a scipy.stats distribution (whose ``rvs(*args, **kwds)`` names no ``size``)."""

    def rvs(self, *args, **kwds):
        raise AssertionError("compile-only must not draw")


_Distribution.__module__ = "scipy.stats._continuous_distns"


@pytest.mark.parametrize(("kwargs", "dtype", "spec"), [
    ({"size": (3, 4)}, None, ((3, 4), np.dtype(np.float64))),  # scipy draws float64
    ({"loc": 0, "scale": 0.02, "size": 7}, popxl.float16, ((7,), popxl.float16)),
    ({"scale": 0.02}, popxl.float16, None),  # no size: one draw, whose shape follows the arguments
])
def test_spec_of_a_scipy_draw_is_its_size(kwargs, dtype, spec):
    assert spec_without_calling(partial(_Distribution().rvs, -2, 2, **kwargs), dtype) == spec
