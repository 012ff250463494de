"""What differs in configuration between the two sides of a comparison: the rows a user reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import profcompare as pc
from profcompare.analysis.nway import nway_table
from profcompare.comparison import compare
from profcompare.comparison.config_diff import COLUMNS, config_differences, config_warnings
from profcompare.model import Report, ReportMeta, Target
from profcompare.render.json_out import comparison_json
from profcompare.render.nway import nway_document
from workloads import find_workload, parse_knobs
from workloads.gpt import layout as gpt_layout
from workloads.mnist import layout as mnist_layout

MK2 = Target("Mk2", 4, 1472, 638_976, 1.33e9, num_replicas=4)
BOW = Target("Bow", 4, 1472, 638_976, 1.85e9, num_replicas=4)
MNIST_CONFIG = {"replicas": 4, "grad_accum": 8, "micro_batch": 8, "sharded_threshold": 512, "hidden": 512,
                "layers": 3, "steps": 2, "lr": 0.001, "seed": 42, "device": "ipu_hw", "data": ""}

SEED_NOTE = ("The seed moves the initial weights, the synthetic data and so the losses; memory and time figures "
             "do not depend on it.")
ARCHITECTURE_NOTE = "Another IPU has other tile memory, tiles and clock: every figure can move."
CLOCK_NOTE = "The clock converts cycles to seconds: time figures move, memory does not."
VARIANT_NOTE = "The variant names the layout under study."
STATE_NOTE = ("Where the optimizer state lives: tile memory (on chip) or Streaming Memory; moves always-live "
              "and Streaming Memory bytes.")
RTS_NOTE = "Whether the optimizer state and its update are sharded over the replicas (RTS): each replica holds a slice."
THRESHOLD_NOTE = "Tensors with at least this many elements are sharded over the replicas."


def meta(variant: str = "onchip", target: Target = MK2, **changes: Any) -> ReportMeta:
    """A simulated MNIST run's meta (``changes`` replace fields)."""
    fields: dict[str, Any] = dict(source="", format="store", producer="profcompare-sim 0.1.0", simulated=True,
                                  target=target, workload="mnist", variant=variant, config=MNIST_CONFIG,
                                  samples_per_step=256)
    fields.update(changes)
    return ReportMeta(**fields)


def rows(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in frame.itertuples(index=False)]


def test_seed_and_target_differences_are_unexpected_and_only_the_target_warns() -> None:
    base = meta()
    new = meta(target=BOW, config={**MNIST_CONFIG, "seed": 7})
    frame = config_differences(base, new)
    assert list(frame.columns) == list(COLUMNS)
    assert rows(frame) == [
        ("IPU architecture", "Mk2", "Bow", "unexpected", True, ARCHITECTURE_NOTE),
        ("clock", "1.33 GHz", "1.85 GHz", "unexpected", True, CLOCK_NOTE),
        ("seed", "42", "7", "unexpected", False, SEED_NOTE),
    ]
    assert config_warnings(frame) == (
        "IPU architecture differs (Mk2 in base, Bow in new); another IPU has other tile memory, tiles and clock: "
        "every figure can move.",
        "Clock differs (1.33 GHz in base, 1.85 GHz in new); the clock converts cycles to seconds: time figures "
        "move, memory does not.",
    )


def test_identical_metas_differ_in_nothing() -> None:
    frame = config_differences(meta(), meta())
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 0
    assert frame["moves_figures"].dtype == bool
    assert config_warnings(frame) == ()


def test_mnist_layouts_are_intended_and_come_first() -> None:
    base = meta("onchip", layout=mnist_layout("onchip", MNIST_CONFIG))
    new = meta("offchip-sharded", layout=mnist_layout("offchip-sharded", MNIST_CONFIG),
               producer="profcompare-sim 0.2.0", config={**MNIST_CONFIG, "hidden": 1024})
    assert rows(config_differences(base, new)) == [
        ("variant", "onchip", "offchip-sharded", "intended", True, VARIANT_NOTE),
        ("optimizer state", "on chip", "Streaming Memory", "intended", True, STATE_NOTE),
        ("replicated tensor sharding", "off", "on", "intended", True, RTS_NOTE),
        ("RTS threshold", None, "512 elements", "intended", True, THRESHOLD_NOTE),
        ("producer", "profcompare-sim 0.1.0", "profcompare-sim 0.2.0", "unexpected", True,
         "Another SDK or simulator version can compile the same program differently: memory and time can move."),
        ("hidden", "512", "1024", "unexpected", True,
         "The hidden size: the model's size sets the bytes of every weight, gradient and optimizer state and "
         "the compute time."),
    ]


def test_gpt_layouts_resolve_the_state_and_recompute_knobs() -> None:
    config = parse_knobs(find_workload("gpt"), {})
    base = meta("resident", workload="gpt", config=config, layout=gpt_layout("resident", config))
    changed = {**config, "recompute": "on", "io_tiles": 128}
    new = meta("phased-rts", workload="gpt", config=changed, layout=gpt_layout("phased-rts", changed))
    frame = config_differences(base, new)
    assert [(r.setting, r.base, r.new, r.kind) for r in frame.itertuples()] == [
        ("variant", "resident", "phased-rts", "intended"),
        ("optimizer state", "on chip", "Streaming Memory", "intended"),
        ("replicated tensor sharding", "off", "on", "intended"),
        ("phased execution", "off", "on", "intended"),
        ("recomputation", "off", "on", "intended"),
        ("I/O tiles per IPU", "0", "128", "intended"),
    ]


def test_settings_recorded_on_one_side_only_are_left_out_but_the_config_stands_in() -> None:
    # a layout on one side only: the raw knobs of both configs are compared instead
    base = meta(config={**MNIST_CONFIG, "sharded_threshold": 1024})
    new = meta(layout=mnist_layout("onchip", MNIST_CONFIG))
    assert rows(config_differences(base, new)) == [
        ("RTS threshold", "1,024 elements", "512 elements", "intended", True, THRESHOLD_NOTE)]
    # a report without a config (a Poplar profile opened alone) does not list every knob
    assert len(config_differences(meta(config={}), meta())) == 0


def test_session_and_engine_options_are_unexpected() -> None:
    options = {"numIOTiles": 0, "partialsTypeMatMuls": "", "engineOptions": {}, "matmulOptions": {}}
    changed = {"numIOTiles": 32, "partialsTypeMatMuls": "half", "engineOptions": {"opt.internalExchangeOptimisationTarget": "memory"},
               "matmulOptions": {"availableMemoryProportion": "0.3"}}
    frame = config_differences(meta(session_options=options), meta(session_options=changed))
    assert [(r.setting, r.base, r.new, r.kind, r.moves_figures) for r in frame.itertuples()] == [
        ("I/O tiles per IPU", "0", "32", "intended", True),
        ("matmul available memory proportion", None, "0.3", "intended", True),
        ("session option partialsTypeMatMuls", "(empty)", "half", "unexpected", True),
        ("engine option opt.internalExchangeOptimisationTarget", None, "memory", "unexpected", True),
    ]


def test_instrumentation_execution_mode_and_backend() -> None:
    base = meta(capabilities=frozenset({"tiles", "variables", "execution"}))
    new = meta(capabilities=frozenset({"tiles", "variables"}), execution="compile-only", simulated=False,
               producer="Poplar 3.3.0")
    frame = config_differences(base, new)
    assert [(r.setting, r.base, r.new, r.moves_figures) for r in frame.itertuples()] == [
        ("backend", "simulator", "Poplar profile", True),
        ("producer", "profcompare-sim 0.1.0", "Poplar 3.3.0", True),
        ("execution mode", "numeric", "compile-only", False),
        ("instrumentation", "execution profile", "none", True),
    ]


def test_the_comparison_keeps_its_differences_and_hands_out_copies() -> None:
    base = Report.build(meta())
    new = Report.build(meta(target=BOW, config={**MNIST_CONFIG, "seed": 7}))
    diff = compare(base, new)
    first = diff.config_differences
    first.loc[0, "setting"] = "changed by the caller"
    assert list(diff.config_differences["setting"]) == ["IPU architecture", "clock", "seed"]
    assert len(diff.config_warnings()) == 2
    document = comparison_json(diff)
    assert document["config_differences"][2] == {"setting": "seed", "base": "42", "new": "7", "kind": "unexpected",
                                                 "moves_figures": False, "note": SEED_NOTE}


SMALL = {"hidden": 64, "steps": 1, "grad_accum": 2, "micro_batch": 4}


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """onchip and offchip-sharded MNIST, small, on the simulator through the runner."""
    out = tmp_path_factory.mktemp("runs")
    return pc.run(["onchip", "offchip-sharded"], backend="sim", out=out, name="r", compile_only=True, **SMALL)


def test_simulated_runs_record_their_layout(sim_run: Any) -> None:
    onchip, offchip = sim_run.reports["onchip"], sim_run.reports["offchip-sharded"]
    assert dict(onchip.meta.layout) == {"optimizer_state": "onchip", "rts": False, "replicas": 4, "io_tiles": 0}
    assert dict(offchip.meta.layout) == {"optimizer_state": "offchip", "rts": True, "sharded_threshold": 512,
                                         "replicas": 4, "io_tiles": 0}
    assert onchip.meta.to_dict()["layout"] == dict(onchip.meta.layout)


def test_onchip_vs_offchip_sharded_on_the_simulator(sim_run: Any) -> None:
    diff = sim_run.compare()
    assert rows(diff.config_differences) == [
        ("variant", "onchip", "offchip-sharded", "intended", True, VARIANT_NOTE),
        ("optimizer state", "on chip", "Streaming Memory", "intended", True, STATE_NOTE),
        ("replicated tensor sharding", "off", "on", "intended", True, RTS_NOTE),
        ("RTS threshold", None, "512 elements", "intended", True, THRESHOLD_NOTE),
    ]
    assert diff.config_warnings() == ()


def test_index_json_lists_each_variants_differences_from_the_base(sim_run: Any) -> None:
    table = nway_table(sim_run.reports, base="onchip")
    variants = {v["label"]: v for v in nway_document(table)["variants"]}
    assert "config_differences" not in variants["onchip"]
    assert [(d["setting"], d["base"], d["new"]) for d in variants["offchip-sharded"]["config_differences"]] == [
        ("variant", "onchip", "offchip-sharded"),
        ("optimizer state", "on chip", "Streaming Memory"),
        ("replicated tensor sharding", "off", "on"),
        ("RTS threshold", None, "512 elements"),
    ]
    written = (Path(sim_run.directory) / "index.json").read_text()
    assert '"config_differences"' in written


def test_phased_vs_phased_rts_on_the_simulator(tmp_path: Path) -> None:
    run = pc.run(["phased", "phased-rts"], workload="gpt", backend="sim", out=tmp_path, name="g", compile_only=True,
                 steps=1)
    assert dict(run.reports["phased-rts"].meta.layout) == {
        "phased": True, "optimizer_state": "offchip", "rts": True, "recompute": False, "tp": 2, "dp": 2,
        "replicas": 4, "io_tiles": 0, "amp": 0.6}
    assert rows(run.compare().config_differences) == [
        ("variant", "phased", "phased-rts", "intended", True, VARIANT_NOTE),
        ("replicated tensor sharding", "off", "on", "intended", True, RTS_NOTE),
    ]


def test_a_batch_that_follows_the_replicas_is_intended() -> None:
    eight = Target("Mk2", 8, 1472, 638_976, 1.33e9, num_replicas=8)
    frame = config_differences(meta(), meta(target=eight, samples_per_step=512))
    assert [(r.setting, r.base, r.new, r.kind, r.moves_figures) for r in frame.itertuples()] == [
        ("replicas", "4", "8", "intended", True),
        ("samples per step", "256", "512", "intended", True),
    ]
    assert config_warnings(frame) == ()
    # a batch that changed per replica too is unexpected, and warns
    frame = config_differences(meta(), meta(target=eight, samples_per_step=1024))
    assert [(r.setting, r.kind) for r in frame.itertuples()] == [("replicas", "intended"),
                                                                 ("samples per step", "unexpected")]
    assert config_warnings(frame) == ("Samples per step differs (256 in base, 1,024 in new); samples one step "
                                      "consumes: throughput (samples/s) moves, and with it the batch's memory "
                                      "and time.",)


def test_a_field_one_side_does_not_record_is_no_difference() -> None:
    # an older store: no popxl-addons generation, no I/O tiles, no samples per step
    older = meta(samples_per_step=None)
    newer = meta(addons_generation="3.4", replication={"io_tiles_per_ipu": 0})
    assert len(config_differences(older, newer)) == 0


def test_the_index_page_says_what_differs_in_each_variant(sim_run: Any) -> None:
    from profcompare.render.nway import DIFFERS_TITLE, differences_row

    table = nway_table(sim_run.reports, base="onchip")
    assert differences_row(table) == (DIFFERS_TITLE, (
        "(the base)",
        "optimizer state: Streaming Memory; replicated tensor sharding: on; RTS threshold: 512 elements"))
    page = (Path(sim_run.directory) / "index.html").read_text()
    assert f"<td>{DIFFERS_TITLE}</td>" in page and "RTS threshold: 512 elements" in page
    # an unexpected difference is marked; a variant without a report says nothing
    other = nway_table([("a", Report.build(meta())), ("b", Report.build(meta(config={**MNIST_CONFIG, "seed": 7}))),
                        ("c", None)], base="a")
    assert differences_row(other)[1] == ("(the base)", "seed: 7 (unexpected)", "")
