"""popxl.Ir(replication='popdist'): the replication factor from poprun's POPDIST_* variables,
one replica without them, launches of several instances refused."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl.errors import SimulatorNotImplementedError
from profcompare.emulator.popxl.popdist_env import read_launch

POPDIST_VARS = ("POPDIST_NUM_TOTAL_REPLICAS", "POPDIST_NUM_LOCAL_REPLICAS", "POPDIST_REPLICA_INDEX_OFFSET",
                "POPDIST_NUM_IPUS_PER_REPLICA")


@pytest.fixture(autouse=True)
def _no_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in POPDIST_VARS:
        monkeypatch.delenv(name, raising=False)


def test_without_poprun_a_single_replica() -> None:
    launch = read_launch()
    assert (launch.env_set, launch.num_instances, launch.instance_index, launch.num_total_replicas) == (False, 1, 0, 1)
    ir = popxl.Ir(replication="popdist")
    assert ir.replication_factor == 1 and ir.instance_replication_factor == 1
    with ir.main_graph, pytest.raises(ValueError, match="replication factor is 1"):
        popxl.replica_sharded_variable([1, 1])


def test_single_instance_launch_sets_the_replication_factor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POPDIST_NUM_TOTAL_REPLICAS", "2")
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "2")
    ir = popxl.Ir(replication="popdist")
    assert ir.replication_factor == 2
    with ir.main_graph:
        full, shard = popxl.replica_sharded_variable(np.array([1, 1], np.int32))
        grad = ops.collectives.replicated_reduce_scatter(popxl.constant(np.array([1, 1], np.int32)))
        shard += grad  # each replica: 1 + (1 + 1)
    with popxl.Session(ir, "ipu_hw") as session:
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(full), np.array([3, 3], np.int32))


def test_several_instances_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POPDIST_NUM_TOTAL_REPLICAS", "4")
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "2")
    monkeypatch.setenv("POPDIST_REPLICA_INDEX_OFFSET", "2")
    launch = read_launch()
    assert (launch.num_instances, launch.instance_index) == (2, 1)
    with pytest.raises(SimulatorNotImplementedError, match="over 2 instances"):
        popxl.Ir(replication="popdist")


@pytest.mark.parametrize(("name", "value"), [("POPDIST_NUM_TOTAL_REPLICAS", "two"),
                                             ("POPDIST_NUM_TOTAL_REPLICAS", "0"),
                                             ("POPDIST_NUM_LOCAL_REPLICAS", "3")])
def test_bad_launch_variables_are_reported(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv("POPDIST_NUM_TOTAL_REPLICAS", "4")
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name if value != "3" else "inconsistent"):
        popxl.Ir(replication="popdist")
