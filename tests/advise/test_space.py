"""The layout spaces the workloads declare: points generated, invalid ones pruned with a reason
before anything runs, --set / --fix / --size applied, bad input refused in one line."""

from __future__ import annotations

from typing import Any

import pytest

import workloads.gpt as gpt
import workloads.mnist as mnist
from profcompare.advisor.space import (
    AdviseSpace,
    Constraint,
    Derived,
    Dimension,
    SearchContext,
    batch_share,
    expand_space,
    layout_text,
    parse_assignment,
    powers_of_two,
)
from profcompare.errors import WorkloadError


def _mnist(**options: Any):
    context = SearchContext(options.pop("ipus", 4), options.pop("global_batch", 256))
    return expand_space(mnist.ADVISE, mnist.WORKLOAD, context, **options)


def test_the_mnist_space_on_the_tutorial_machine():
    space = _mnist()
    # 4 replicas values (1, 2, 4; 8 and 16 pruned) x (2 unsharded + 2 sharded x 3 thresholds) x 4 micro-batches
    assert len(space.valid) == 3 * (2 + 2 * 3) * 4 == 96
    assert space.pruned_counts == {"replicas exceed --ipus": 2 * (2 + 2 * 3) * 4}
    assert space.searched == ("variant", "replicas", "sharded_threshold", "micro_batch", "grad_accum")
    for point in space.valid:
        knobs = point.knobs
        assert knobs["micro_batch"] * knobs["grad_accum"] * knobs["replicas"] == 256
        assert dict(point.config)["grad_accum"] == knobs["grad_accum"]
        # the threshold is a knob of the sharded variants only
        assert ("sharded_threshold" in knobs) == knobs["variant"].endswith("-sharded")
    first = space.valid[0]
    assert dict(first.knobs) == {"variant": "onchip", "replicas": 1, "micro_batch": 4, "grad_accum": 64}
    assert dict(first.config) == {**{k.name: k.default for k in mnist.KNOBS}, "replicas": 1, "micro_batch": 4,
                                  "grad_accum": 64}


def test_global_batch_not_divisible_is_pruned_with_its_reason():
    space = _mnist(global_batch=96, set_values={"replicas": ["1", "2", "4"], "micro_batch": ["8", "16", "32"]},
                   fixed={"variant": "onchip"})
    # 96 = 2^5 x 3: micro_batch x replicas must divide it: 32 x 4 = 128 does not; 16 x 4 = 64 does not ...
    valid = sorted((p.knobs["replicas"], p.knobs["micro_batch"], p.knobs["grad_accum"]) for p in space.valid)
    assert valid == [(1, 8, 12), (1, 16, 6), (1, 32, 3), (2, 8, 6), (2, 16, 3), (4, 8, 3)]
    assert space.pruned_counts == {"global batch not divisible by the other batch knobs": 3}


def test_set_and_fix_shape_the_space():
    space = _mnist(set_values={"replicas": ["1", "2"], "hidden": ["64", "128"]},
                   fixed={"variant": "offchip-sharded", "sharded_threshold": "1e10", "layers": "1"})
    assert len(space.valid) == 2 * 4 * 2  # replicas x micro_batch x hidden
    assert dict(space.base) == {"sharded_threshold": 10**10, "layers": 1}
    assert {p.config["hidden"] for p in space.valid} == {64, 128}
    assert all(p.config["layers"] == 1 and p.knobs["sharded_threshold"] == 10**10 for p in space.valid)


def test_a_fixed_knob_holds_for_the_variants_that_leave_it_out():
    space = _mnist(fixed={"sharded_threshold": "1024"}, set_values={"variant": ["onchip", "onchip-sharded"]})
    onchip = [p for p in space.valid if p.variant == "onchip"]
    assert onchip and all("sharded_threshold" not in p.knobs and p.config["sharded_threshold"] == 1024 for p in onchip)


def test_fixing_a_derived_knob_turns_its_rule_into_a_constraint():
    space = _mnist(fixed={"grad_accum": "8", "variant": "onchip"})
    assert sorted((p.knobs["replicas"], p.knobs["micro_batch"]) for p in space.valid) == [(1, 32), (2, 16), (4, 8)]
    assert space.pruned_counts["grad_accum breaks the rule micro_batch x grad_accum x replicas = global batch"] == 9


def test_the_gpt_space_tiny_and_gptj_6b():
    tiny = expand_space(gpt.ADVISE, gpt.WORKLOAD, SearchContext(16, 16))
    # tp 1, 2, 4 divide the 4 heads; dp = 16 / tp; micro_batch x grad_accum x dp = 16; amp 0.2 or 0.6
    assert len(tiny.valid) == (1 + 2 + 3) * 10 * 2 * 2 == 240
    assert tiny.pruned_counts == {"tp does not divide heads": 288,
                                  "global batch not divisible by the other batch knobs": 120,
                                  "RTS needs Adam state off chip": 72}
    assert {p.config["amp"] for p in tiny.valid} == {0.2, 0.6}
    for point in tiny.valid:
        knobs = point.knobs
        assert knobs["tp"] * knobs["dp"] == 16 and knobs["micro_batch"] * knobs["grad_accum"] * knobs["dp"] == 16
        assert not (knobs["variant"] == "phased-rts" and knobs["state"] == "onchip")
    big = expand_space(gpt.ADVISE, gpt.WORKLOAD, SearchContext(16, 16), size="gptj-6b")
    assert len(big.valid) == 480  # more than EXHAUSTIVE_LIMIT: searched by NSGA-II
    assert all(p.config["layers"] == 28 and p.config["hidden"] == 4096 for p in big.valid)
    assert {p.config["amp"] for p in big.valid} == {0.2, 0.6}


@pytest.mark.parametrize("options, message", [
    ({"set_values": {"replicaz": ["1"]}}, "unknown knob 'replicaz' for workload 'mnist' (did you mean 'replicas'?)"),
    ({"set_values": {"replicas": ["1", "x"]}}, "bad value 'x' for knob 'replicas': expected an integer"),
    ({"set_values": {"variant": ["onchip", "offchip-sharde"]}}, "unknown mnist variant 'offchip-sharde'"),
    ({"set_values": {"replicas": ["1", "1"]}}, "knob replicas: values 1, 1 repeat a value"),
    ({"set_values": {"replicas": ["1"]}, "fixed": {"replicas": "2"}}, "knob replicas is both set and fixed"),
    ({"size": "huge"}, "unknown mnist size 'huge'"),
    ({"ipus": 0}, "bad --ipus 0"),
    ({"set_values": {"replicas": ["8", "16"]}}, "no layout of mnist is left to run on 4 IPU(s) with global batch 256: "
                                                 "replicas exceed --ipus (64)"),
])
def test_bad_input_is_refused_in_one_line(options, message):
    with pytest.raises(WorkloadError) as caught:
        _mnist(**options)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_parse_assignment():
    assert parse_assignment("micro-batch=8, 16", "--set") == ("micro_batch", ["8", "16"])
    for bad in ("replicas", "=1", "replicas=", "replicas=1,,2"):
        with pytest.raises(WorkloadError, match="expected KNOB=V1,V2"):
            parse_assignment(bad, "--set")


def test_helpers():
    assert powers_of_two(1, 16) == (1, 2, 4, 8, 16) and powers_of_two(3, 9) == (4, 8)
    assert batch_share(256, (8, 4)) == 8
    assert layout_text({"variant": "phased", "dp": 1, "tp": 16}, ("tp", "dp")) == "phased, tp=16, dp=1"


def test_a_workload_refusing_a_point_prunes_it_with_the_workload_words():
    space = AdviseSpace(
        workload="mnist", variants=("onchip",), dimensions=(Dimension("layers", (1, 2)), Dimension("hidden", (8, 0))),
        default_ipus=4, default_global_batch=256, global_batch_rule="",
        derived=(Derived("steps", "steps = layers", lambda knobs, context: knobs["layers"]),),
        constraints=(Constraint("two layers need hidden 8", lambda knobs, context: knobs["layers"] == 1
                                or knobs["hidden"] == 8),),
    )
    result = expand_space(space, mnist.WORKLOAD, SearchContext(4, 256))
    assert [(dict(c.knobs), c.reason) for c in result.candidates] == [
        ({"variant": "onchip", "layers": 1, "hidden": 8, "steps": 1}, None),
        ({"variant": "onchip", "layers": 1, "hidden": 0, "steps": 1},
         "refused by the workload: bad value 0 for knob 'hidden': valid values are integers from 1 to 1048576"),
        ({"variant": "onchip", "layers": 2, "hidden": 8, "steps": 2}, None),
        ({"variant": "onchip", "layers": 2, "hidden": 0, "steps": None}, "two layers need hidden 8"),
    ]


def test_declaring_a_space_imports_neither_pandas_nor_the_runner():
    import subprocess
    import sys

    code = ("import sys, workloads.mnist, workloads.gpt; "
            "print(sorted(m for m in ('pandas', 'profcompare.runner', 'optuna') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
