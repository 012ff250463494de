"""The memory ledger of the simulated MNIST variants (tutorial defaults).

Reconciliation holds by construction whatever the compile model's numbers are: the ledger and
the variables table are checked against the report's own summary, tiles and liveness table.
The per-layout moves are checked against the program's own facts: bytes = shape x dtype,
divided by the replica count (rounded up: popxl pads shards) for replica-sharded state.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.model import LOCATIONS, ROLES, Report
from workloads import find_variant, parse_knobs
from workloads._mnist_program import build_program

VARIANTS = ("onchip", "onchip-sharded", "offchip", "offchip-sharded")


def _build(variant: str):
    config = parse_knobs(find_variant(variant), {})
    program = lower(build_program(variant, config).ir, "ipu_hw")
    return config, program, compile_program(program).report


@pytest.fixture(scope="module")
def built():
    return {v: _build(v) for v in VARIANTS}


def _weights(program) -> dict[str, int]:
    """Model parameters (main-graph weight variables) -> number of elements."""
    return {t.name: t.nelms for t in program.tensors.values()
            if t.graph == program.main_graph and t.storage == "variable" and t.kind == "weight"}


def _sharded(nelms: int, config) -> bool:
    return config["replicas"] > 1 and nelms >= config["sharded_threshold"] and nelms % config["replicas"] == 0


def _adam_state_bytes(nelms: int, replicas: int) -> int:
    """first moment float16 + second moment float32 over ``nelms`` elements, shard of ``replicas``
    (padded), + a float32 step (never sharded)."""
    per_replica = math.ceil(nelms / replicas)
    return per_replica * (2 + 4) + 4


def _moments(nelms: int, replicas: int) -> tuple[int, int, int]:
    """Bytes of the first moment, second moment and step of one parameter's Adam state."""
    per_replica = math.ceil(nelms / replicas)
    return per_replica * 2, per_replica * 4, 4


def _copies_of_state(total: int, nelms: int, replicas: int) -> bool:
    """Whether ``total`` is at least one whole copy of the state plus whole copies of moments."""
    first, second, step = _moments(nelms, replicas)
    return any(a * first + b * second + c * step == total
               for a in range(1, 5) for b in range(1, 5) for c in range(1, 5))


def _ledger_bytes(report: Report, parameter: str, role: str, location: str) -> int:
    led = report.ledger()
    rows = led[(led["parameter"] == parameter) & (led["role"] == role) & (led["location"] == location)]
    return int(rows["bytes"].sum())


# -- reconciliation ---------------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_ledger_totals_equal_the_summary(built, variant):
    _, _, report = built[variant]
    led = report.ledger()
    summary = report.summary()
    assert set(led["location"]) <= set(LOCATIONS) and set(led["role"]) <= set(ROLES)
    by_location = led.groupby("location")
    assert by_location["bytes"].sum().get("streaming_memory", 0) == summary["streaming_memory_bytes"]
    assert by_location["bytes_at_peak"].sum()["not_always_live"] == summary["not_always_live_peak_bytes"]
    # the always-live rows are the tiles' always-live variables and constants: always-live
    # bytes minus every category that is not a variable or constant (code, vertex data, ...)
    cats = report.categories
    non_variable = int(cats.loc[cats["group"].astype(str) != "variables", "bytes"].sum())
    assert by_location["bytes"].sum().get("always_live", 0) == summary["always_live_bytes"] - non_variable


@pytest.mark.parametrize("variant", VARIANTS)
def test_variables_live_at_each_step_add_up_to_the_liveness_curve(built, variant):
    _, _, report = built[variant]
    v = report.variables
    nal = v[~v["always_live"]]
    steps = len(report.liveness)
    diff = np.zeros(steps + 1, dtype=np.int64)
    np.add.at(diff, nal["first_step"].to_numpy(dtype=np.int64), nal["bytes"].to_numpy(dtype=np.int64))
    np.add.at(diff, nal["last_step"].to_numpy(dtype=np.int64) + 1, -nal["bytes"].to_numpy(dtype=np.int64))
    np.testing.assert_array_equal(np.cumsum(diff)[:steps], report.liveness["not_always_live_bytes"].to_numpy())
    assert report.live_at_peak()["bytes"].sum() == report.summary()["not_always_live_peak_bytes"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_byte_of_model_state_is_attributed(built, variant):
    config, program, report = built[variant]
    v = report.variables
    state = v[v["kind"].astype(str).isin(["weight", "optimizer_state", "accumulator"])]
    # only the gradient-accumulation counter, shared by every parameter, belongs to none
    unattributed = state[state["parameter"] == ""]
    assert set(unattributed["name"].str.replace(r"^.*/|@\d+$", "", regex=True)) <= {"mean_accum_counter"}
    assert (report.remote_buffers["parameter"] != "").all()
    assert set(report.ledger()["parameter"]) - {""} == set(_weights(program))


def test_a_graph_called_for_two_weights_has_one_row_per_call(built):
    _, _, report = built["onchip"]
    v = report.variables.set_index("name")
    adam_vars = v[v.index.str.match(r"Adam_subgraph\(\d+\)/var@\d+$")]
    # fc2.weight and fc3.weight (both 512 x 512) share one Adam graph: two instances of its input
    shared = adam_vars[adam_vars["bytes"] == 512 * 512 * 4]
    assert sorted(shared["parameter"]) == ["fc2.weight", "fc3.weight"]
    assert set(shared["role"].astype(str)) == {"weight_copy"}
    a, b = shared.sort_values("first_step").itertuples()
    assert a.last_step < b.first_step  # each instance is live during its own call only


# -- the moves of each layout, from the program's facts ----------------------------------------


def _state_variables(program) -> list[str]:
    """Names of the program's optimizer-state variables (on chip or remote), from the program."""
    return [t.name for t in program.tensors.values()
            if t.graph == program.main_graph and t.storage in ("variable", "remote") and t.kind == "optimizer_state"]


def _tile_state_bytes(report: Report, program, parameter: str) -> int:
    """Tile memory of ``parameter``'s optimizer-state variables themselves (not their copies)."""
    v = report.variables
    rows = v[v["name"].isin(_state_variables(program)) & (v["parameter"] == parameter)]
    assert set(rows["role"].astype(str)) <= {"optimizer_state"}
    return int(rows["bytes"].sum())


@pytest.mark.parametrize("variant", VARIANTS)
def test_adam_state_lives_where_the_layout_puts_it(built, variant):
    config, program, report = built[variant]
    remote = variant.startswith("offchip")
    sharded_layout = variant.endswith("-sharded")
    for parameter, nelms in _weights(program).items():
        shards = config["replicas"] if sharded_layout and _sharded(nelms, config) else 1
        expected = _adam_state_bytes(nelms, shards)
        tile = _tile_state_bytes(report, program, parameter)
        tile_rows = sum(_ledger_bytes(report, parameter, "optimizer_state", loc)
                        for loc in ("always_live", "not_always_live"))
        staging = _ledger_bytes(report, parameter, "remote_staging", "not_always_live")
        if remote:
            assert _ledger_bytes(report, parameter, "optimizer_state", "streaming_memory") == expected, parameter
            assert tile == tile_rows == 0, parameter
            # loaded copies of the state: whole copies of its moments live at once
            assert _copies_of_state(staging, nelms, shards), (parameter, staging)
        else:
            assert tile == expected, parameter
            # the state, plus any call-input copies of its moments live at the same time
            assert _copies_of_state(tile_rows, nelms, shards), (parameter, tile_rows)
            assert staging == 0, parameter


def test_tutorial_adam_state_totals(built):
    def streaming(variant: str) -> int:
        led = built[variant][2].ledger()
        return int(led.loc[(led["role"] == "optimizer_state") & (led["location"] == "streaming_memory"), "bytes"].sum())

    def tile(variant: str) -> int:
        _, program, report = built[variant]
        return sum(_tile_state_bytes(report, program, p) for p in _weights(program))

    assert tile("onchip") == 5_594_204 and tile("onchip-sharded") == 1_398_620
    assert streaming("offchip") == 5_594_204 and streaming("offchip-sharded") == 1_398_620
    assert tile("offchip") == tile("offchip-sharded") == 0


@pytest.mark.parametrize("variant", ["onchip-sharded", "offchip-sharded"])
def test_sharding_adds_shards_gathered_weights_and_reduce_scattered_gradients(built, variant):
    config, program, report = built[variant]
    replicas = config["replicas"]
    for parameter, nelms in _weights(program).items():
        shard = _ledger_bytes(report, parameter, "shard", "not_always_live")
        gathered = _ledger_bytes(report, parameter, "gathered_weight", "not_always_live")
        if _sharded(nelms, config):
            assert shard == math.ceil(nelms / replicas) * 4, parameter
            assert gathered == nelms * 4, parameter
        else:
            assert shard == gathered == 0, parameter
    # the reduce-scattered gradient of fc1.weight reaches the optimizer as a shard-sized gradient
    v = report.variables
    scattered = v[v["name"].str.endswith("fc1.weight_reduce_scattered") & (v["parameter"] == "fc1.weight")]
    assert len(scattered) and set(scattered["role"].astype(str)) == {"gradient"}
    assert set(scattered["bytes"]) == {math.ceil(784 * 512 / replicas) * 4}


def test_remote_buffers_say_which_moment_they_hold(built):
    buffers = built["offchip-sharded"][2].remote_buffers.set_index("name")
    assert buffers.loc["adam.fc1.weight.first_order", ["parameter", "role", "which"]].tolist() == [
        "fc1.weight", "optimizer_state", "first_order"]
    assert buffers.loc["adam.fc1.weight.second_order", "which"] == "second_order"
    assert buffers.loc["adam.fc1.weight.step", "which"] == "step"
    assert buffers.loc["adam.fc1.weight.first_order", "bytes"] == 784 * 512 // 4 * 2


# -- comparisons of layouts --------------------------------------------------------------------

PAIRS = [("onchip", "offchip-sharded"), ("onchip", "onchip-sharded"), ("offchip", "offchip-sharded")]


@pytest.mark.parametrize("base, new", PAIRS)
def test_matched_variables_share_parameter_and_role(built, base, new):
    from profcompare.comparison import compare

    diff = compare(built[base][2], built[new][2])
    paired = diff.variables[diff.variables["match"].astype(str) != "unmatched"]
    assert (paired["base_parameter"] == paired["new_parameter"]).all()
    assert (paired["base_role"] == paired["new_role"]).all()
    # a graph index (creation order, also in ``Net_subgraph(0)_bwd/``) never pairs two rows on its own
    indexed = paired[paired["base_name"].str.contains(r"\(\d+\)(?:_[a-z]+)?/")]
    assert set(indexed["match"].astype(str)) <= {"attributed"}
    # the same tensor (name, parameter and role) on both sides is paired, never removed + added
    unpaired = diff.variables[diff.variables["match"].astype(str) == "unmatched"]

    def keys(side: str) -> set:
        rows = unpaired[unpaired[f"{side}_name"].notna()]
        return set(zip(rows[f"{side}_name"], rows[f"{side}_parameter"], rows[f"{side}_role"], strict=True))

    assert not keys("base") & keys("new")


@pytest.mark.parametrize("base, new", PAIRS)
def test_ledger_moves_lead_with_the_optimizer_state(built, base, new):
    from profcompare.comparison import compare

    config, program, _ = built[new]
    diff = compare(built[base][2], built[new][2])
    moves = diff.ledger_moves(n=None)
    for parameter, nelms in _weights(program).items():
        row = moves[(moves["parameter"] == parameter) & (moves["role"] == "optimizer_state")]
        shards = {side: config["replicas"] if variant.endswith("-sharded") and _sharded(nelms, config) else 1
                  for side, variant in (("base", base), ("new", new))}
        expected = {side: _adam_state_bytes(nelms, shards[side]) for side in shards}
        if expected["base"] == expected["new"] and base.startswith("offchip") == new.startswith("offchip"):
            assert row.empty, parameter
            continue
        assert len(row) == 1, parameter
        for side, variant in (("base", base), ("new", new)):
            if variant.startswith("offchip"):
                assert row[f"{side}_streaming_memory"].item() == expected[side], (parameter, side)
                assert row[f"{side}_always_live"].item() + row[f"{side}_not_always_live"].item() == 0
            else:
                tile = row[f"{side}_always_live"].item() + row[f"{side}_not_always_live"].item()
                assert _copies_of_state(tile, nelms, shards[side]), (parameter, side)
    # the largest weight's optimizer state is among the first moves
    top = moves.head(4)
    assert ((top["parameter"] == "fc1.weight") & (top["role"] == "optimizer_state")).any()


@pytest.mark.parametrize("base, new", PAIRS)
def test_peak_composition_explains_the_change_of_the_peak(built, base, new):
    from profcompare.comparison import compare

    diff = compare(built[base][2], built[new][2])
    peak = diff.peak_composition()
    assert peak["delta_bytes"].sum() == diff.summary.loc["not_always_live_peak_bytes", "delta"]
    by_parameter = diff.ledger_by_parameter()
    sm = diff.ledger[diff.ledger["location"] == "streaming_memory"]
    assert by_parameter["delta_streaming_memory"].sum() == sm["delta_bytes"].sum() == (
        diff.summary.loc["streaming_memory_bytes", "delta"])
