"""Attribution from Poplar variable names (the pva reader; docs/pva-adapter.md, "Attribution
from names"). The names follow the patterns popxl and popxl-addons produce: dotted module keys,
``accum.<key>`` accumulators and their shared counter, optimizer state named after its variable,
graph-scoped ids ``<graph>(<n>)/<name>``, PopART's ``__t<n>`` repeats and remote-load outputs."""

from __future__ import annotations

import pathlib
import sqlite3

import pytest
from fake_pva import FakePva, build_report_tree, liveness_step, variable

from profcompare.analysis.ledger import unattributed_bytes
from profcompare.readers.name_attribution import attribute_names
from profcompare.readers.pva import read_pva

#: every name of one MLP training step: the main graph's variables, a called graph's inputs,
#: remote staging, host input and names no rule covers
NAMES = {
    # name: (parameter, role, which)
    "fc1.weight": ("fc1.weight", "weight", ""),
    "fc1.bias": ("fc1.bias", "weight", ""),
    "layers.0.attention.qkv.weight": ("layers.0.attention.qkv.weight", "weight", ""),
    "accum.fc1.weight": ("fc1.weight", "accumulator", ""),
    "accum.fc1.bias": ("fc1.bias", "accumulator", ""),
    "mean_accum_counter": ("", "accumulator", ""),
    "adam.fc1.weight.first_order": ("fc1.weight", "optimizer_state", "first_order"),
    "adam.fc1.weight.second_order": ("fc1.weight", "optimizer_state", "second_order"),
    "adam.fc1.weight.step": ("fc1.weight", "optimizer_state", "step"),
    "Adam/first_order/fc1.bias": ("fc1.bias", "optimizer_state", "first_order"),
    "Linear_subgraph(1)/fc1/weight": ("fc1.weight", "weight_copy", ""),
    "fc1.weight__t12": ("fc1.weight", "weight_copy", ""),
    "Gradient___fc1.weight": ("fc1.weight", "gradient", ""),
    "adam.fc1.weight.second_order_remote_loaded": ("fc1.weight", "remote_staging", ""),
    "images_hostload": ("", "activation", ""),
    # graph-scoped ids whose names say nothing of a parameter: never guessed
    "Adam_subgraph(2)/var": ("", "other", ""),
    "Adam_subgraph(2)/first_order": ("", "other", ""),
    "first_order__t127": ("", "other", ""),
    # a gradient of something no rule knows as a parameter (an activation's, by PopART's naming)
    "Gradient___relu_out": ("", "other", ""),
    "matmul__t4": ("", "other", ""),
    "": ("", "other", ""),
    "</script><b>x|y</b>": ("", "other", ""),
}


#: How popxl, PopART and popxl-addons build the names the rules read, recorded from their public
#: sources (facts only): (how the name is built, where, a name built that way, its attribution).
#: popart @d2f20d78 (popxl 3.4), popxl-addons @7499fca8 (release 3.4).
RECORDED_PATTERNS = [
    ('"accum." + name (the accumulator of a named variable)',
     "popxl-addons @7499fca8 popxl_addons/transforms/autodiff.py:183",
     "accum." + "layers.0.mlp.weight", ("layers.0.mlp.weight", "accumulator", "")),
    ('add_input("mean_accum_counter", ...) (one counter shared by every accumulator)',
     "popxl-addons @7499fca8 popxl_addons/transforms/autodiff.py:173",
     "mean_accum_counter", ("", "accumulator", "")),
    ('add_replica_sharded_variable_input("first_order" / "second_order"), add_variable_input("step") '
     '(Adam state, named under the optimizer\'s prefix by the variable factory)',
     "popxl-addons @7499fca8 popxl_addons/optimizers/adam.py:54,62,90",
     "optimizer.layers.0.mlp.weight.second_order", ("layers.0.mlp.weight", "optimizer_state", "second_order")),
    ('"{}__t{}".format(base_id, counter) (createIntermediateTensorId, for a name already in the graph)',
     "popart @d2f20d78 willow/src/ir.cpp:4262, python/popxl/python_files/graph.py:_create_tensor_id",
     "layers.0.mlp.weight" + "__t" + "41", ("layers.0.mlp.weight", "weight_copy", "")),
    ('name + "_remote_loaded" (the output of ops.remote_load)',
     "popart @d2f20d78 python/popxl/python_files/ops/remote_load.py:82",
     "optimizer.layers.0.mlp.weight.first_order" + "_remote_loaded", ("layers.0.mlp.weight", "remote_staging", "")),
    ('name + "_hostload" (the output of ops.host_load)',
     "popart @d2f20d78 python/popxl/python_files/ops/host_load.py:45",
     "x" + "_hostload", ("", "activation", "")),
    ('"Gradient___" + id and graph-scoped ids "<fn>_subgraph(<n>)/<id>" (autodiff\'s documented example)',
     "popart @d2f20d78 python/popxl/python_files/transforms/autodiff.py:263-269",
     "Module_subgraph(0)/" + "Gradient___" + "layers.0.mlp.weight", ("layers.0.mlp.weight", "gradient", "")),
    ('"<fn>_subgraph(<n>)/" + name scopes joined by "/" (a called graph\'s input)',
     "popart @d2f20d78 python/popxl/python_files/graph.py:_create_tensor_id (addScope), autodiff.py:263",
     "Module_subgraph(0)/layers/0/mlp/weight", ("layers.0.mlp.weight", "weight_copy", "")),
]


@pytest.mark.parametrize("how, where, name, expected", RECORDED_PATTERNS, ids=[r[2] for r in RECORDED_PATTERNS])
def test_names_built_as_the_real_libraries_build_them(how: str, where: str, name: str, expected: tuple) -> None:
    # the parameter itself is in the report under its plain dotted name, as popxl-addons names it
    parameters, roles, which = attribute_names(["layers.0.mlp.weight", name])
    assert (parameters[1], roles[1], which[1]) == expected, (how, where)


def test_every_pattern_is_attributed_by_the_documented_rules() -> None:
    parameters, roles, which = attribute_names(list(NAMES))
    assert dict(zip(NAMES, zip(parameters, roles, which))) == NAMES


@pytest.mark.parametrize("name", ["accum.x", "adam.x.first_order", "Gradient___fc9.weight", "fc1.weight__t3"])
def test_a_role_needs_its_parameter_known_from_the_report(name: str) -> None:
    # alone, nothing names x / fc9.weight / fc1.weight as a parameter except the name itself:
    # accumulators and optimizer state make their x known; gradients and repeats do not
    parameters, roles, _ = attribute_names([name])
    expected = {"accum.x": ("x", "accumulator"), "adam.x.first_order": ("x", "optimizer_state"),
                "Gradient___fc9.weight": ("", "other"), "fc1.weight__t3": ("", "other")}[name]
    assert (parameters[0], roles[0]) == expected


def test_a_parameter_named_by_its_accumulator_makes_the_plain_name_a_weight() -> None:
    parameters, roles, _ = attribute_names(["w", "accum.w", "Gradient___w"])
    assert parameters == ["w", "w", "w"] and roles == ["weight", "accumulator", "gradient"]


def test_attribution_is_linear_in_names() -> None:
    names = [f"layer{i}.weight" for i in range(50_000)] + [f"accum.layer{i}.weight" for i in range(50_000)]
    parameters, roles, _ = attribute_names(names)
    assert parameters[49_999] == "layer49999.weight" and roles[-1] == "accumulator"


def test_the_reader_fills_attribution_and_counts_the_unattributed(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "profile.pop"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE programs (id INTEGER, name TEXT)")
    con.commit()
    con.close()
    tree = build_report_tree()
    compilation = tree.compilation
    compilation.alwaysLiveVariables = [variable("fc1.weight", 4096), variable("accum.fc1.weight", 4096),
                                       variable("adam.fc1.weight.first_order", 2048)]
    steps = compilation.livenessProgramSteps
    compilation.livenessProgramSteps = [
        liveness_step(steps[0].program, 0, []),
        liveness_step(steps[1].program, 300, [variable("Adam_subgraph(2)/var", 200), variable("images_hostload", 100)]),
        liveness_step(steps[2].program, 350, [variable("Adam_subgraph(2)/var", 200),
                                              variable("Linear_subgraph(1)/fc1/weight", 150)]),
        liveness_step(steps[3].program, 0, []),
    ]
    report = read_pva(path, pva_module=FakePva(tree))
    got = report.variables.set_index("name")[["parameter", "role", "which"]].astype(str)
    assert got.to_dict("index") == {
        "fc1.weight": {"parameter": "fc1.weight", "role": "weight", "which": ""},
        "accum.fc1.weight": {"parameter": "fc1.weight", "role": "accumulator", "which": ""},
        "adam.fc1.weight.first_order": {"parameter": "fc1.weight", "role": "optimizer_state", "which": "first_order"},
        "Adam_subgraph(2)/var": {"parameter": "", "role": "other", "which": ""},
        "images_hostload": {"parameter": "", "role": "activation", "which": ""},
        "Linear_subgraph(1)/fc1/weight": {"parameter": "fc1.weight", "role": "weight_copy", "which": ""},
    }
    ledger = report.ledger()
    # the graph-scoped var is unattributed: 200 B live at the peak (step 2), never given to fc1.weight
    assert unattributed_bytes(ledger) == 200
    fc1 = ledger[ledger["parameter"] == "fc1.weight"].set_index(["role", "location"])["bytes"].to_dict()
    assert fc1 == {("weight", "always_live"): 4096, ("weight_copy", "not_always_live"): 150,
                   ("accumulator", "always_live"): 4096, ("optimizer_state", "always_live"): 2048}


#: popxl-addons' phased naming (GPT-J's finetuning.py): per-layer variable factories grouped as
#: fwd / optim / bwd, staged by load graphs that name a key without its layer, gradients inside
#: a gradient graph ("<graph>(<n>)_bwd"), replica-sharded shards "__sharded"
PHASED = {
    "decoder.0.fwd.attention.qkv.weight": ("decoder.0.fwd.attention.qkv.weight", "weight", ""),
    "decoder.1.fwd.attention.qkv.weight": ("decoder.1.fwd.attention.qkv.weight", "weight", ""),
    # the optim group names the same key as the fwd group's weight
    "decoder.0.optim.attention.qkv.weight.first_order": ("decoder.0.fwd.attention.qkv.weight", "optimizer_state",
                                                         "first_order"),
    "decoder.1.optim.attention.qkv.weight.step": ("decoder.1.fwd.attention.qkv.weight", "optimizer_state", "step"),
    "decoder.0.bwd.accum.attention.qkv.weight": ("decoder.0.fwd.attention.qkv.weight", "accumulator", ""),
    "decoder.0.bwd.mean_accum_counter": ("", "accumulator", ""),
    # inside a load graph the key has no layer: the layers' family
    "load_remote_subgraph(2)/fwd.attention.qkv.weight_remote_load": ("decoder.*.fwd.attention.qkv.weight",
                                                                     "remote_staging", ""),
    "load_remote_subgraph(3)/optim.attention.qkv.weight.second_order_remote_load": (
        "decoder.*.fwd.attention.qkv.weight", "remote_staging", ""),
    "Block_subgraph(7)_bwd/Gradient___attention/qkv/weight": ("decoder.*.fwd.attention.qkv.weight", "gradient", ""),
    "Block_subgraph(7)/attention/qkv/weight": ("decoder.*.fwd.attention.qkv.weight", "weight_copy", ""),
    "decoder.0.fwd.attention.qkv.weight__sharded": ("decoder.0.fwd.attention.qkv.weight", "shard", ""),
    # an activation's gradient stays unattributed, a key of one component names nothing
    "Block_subgraph(7)_bwd/Gradient___attention/matmul_out": ("", "other", ""),
    "Block_subgraph(7)/weight": ("", "other", ""),
}


def test_popxl_addons_phased_names() -> None:
    parameters, roles, which = attribute_names(list(PHASED))
    assert dict(zip(PHASED, zip(parameters, roles, which))) == PHASED
