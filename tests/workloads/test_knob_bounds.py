"""Absurd sizes are refused before anything runs, for every knob of every workload and through
every command (run, sweep, advise, the notebook API): one line naming the knob and the bound,
exit 2, no run directory."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import profcompare
from profcompare.cli import main
from profcompare.errors import WorkloadError
from workloads import find_variant, list_workloads, parse_knob_value, parse_knobs
from workloads._gpt_limits import INT64_BYTES, check_size, mask_host_bytes, program_bytes

GIB = 2**30

BOUNDED = [(w, k) for w in list_workloads() for k in w.knobs if k.bounds is not None]


def test_every_int_knob_of_every_workload_declares_its_bounds() -> None:
    names = {w.name for w in list_workloads()}
    assert {"mnist", "gpt"} <= names
    for workload in list_workloads():
        for knob in workload.knobs:
            if knob.type is int:
                assert knob.bounds is not None, f"{workload.name} knob {knob.name} has no bounds"
                low, high = knob.bounds
                assert low <= knob.default <= high


def test_real_configurations_are_within_the_bounds() -> None:
    # GPT-3 175B: 96 layers, hidden 12288, 96 heads, seq 2048, vocab 50257 (padded to 50304 for tp)
    config = parse_knobs(find_variant("resident"), {"layers": 96, "hidden": 12288, "heads": 96, "seq": 2048,
                                                    "vocab": 50304, "tp": 8, "dp": 32, "micro_batch": 1,
                                                    "grad_accum": 6})
    assert config["hidden"] == 12288
    assert program_bytes(config) < INT64_BYTES


@pytest.mark.parametrize(("workload", "knob"), BOUNDED, ids=[f"{w.name}-{k.name}" for w, k in BOUNDED])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_a_value_past_a_knob_bound_names_the_knob_and_the_bound(workload, knob, data) -> None:
    low, high = knob.bounds
    value = data.draw(st.integers(max_value=low - 1, min_value=low - 2**80)
                      | st.integers(min_value=high + 1, max_value=high + 2**80))
    message = f"bad value {value} for knob '{knob.name}': valid values are integers from {low} to {high}"
    with pytest.raises(WorkloadError) as caught:
        parse_knobs(workload, {knob.name: str(value)})
    assert str(caught.value) == message
    with pytest.raises(WorkloadError) as caught:
        parse_knob_value(knob, value)
    assert str(caught.value) == message


@pytest.mark.parametrize(("workload", "knob"), BOUNDED, ids=[f"{w.name}-{k.name}" for w, k in BOUNDED])
def test_the_bounds_themselves_are_accepted(workload, knob) -> None:
    low, high = knob.bounds
    assert parse_knob_value(knob, str(low)) == low
    assert parse_knob_value(knob, f"{high}") == high


@pytest.fixture
def empty_cwd(tmp_path, monkeypatch) -> Iterator[str]:
    monkeypatch.chdir(tmp_path)
    yield str(tmp_path)


def _run(*args: str) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    import click

    @click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                     "help_option_names": []})
    @click.argument("argv", nargs=-1, type=click.UNPROCESSED)
    def entry(argv: tuple[str, ...]) -> None:
        raise SystemExit(main(list(argv)))

    result = CliRunner().invoke(entry, list(args))
    return result.exit_code, result.stdout, result.stderr


HIDDEN = "profcompare: error: bad value 1000000000 for knob 'hidden': valid values are integers from 1 to 1048576\n"
SEQ = "profcompare: error: bad value 1000000000 for knob 'seq': valid values are integers from 1 to 1048576\n"
VOCAB = ("profcompare: error: bad value 1000000000000 for knob 'vocab': valid values are integers from 1 to "
         "4194304\n")
HIDDEN_2_40 = ("profcompare: error: bad value 1099511627776 for knob 'hidden': valid values are integers from 1 "
               "to 1048576\n")
SEED = "profcompare: error: bad value 4294967296 for knob 'seed': valid values are integers from 0 to 4294967295\n"
RUN = ("run", "--workload", "gpt", "resident", "--compile-only")
SWEEP = ("sweep", "--workload", "gpt", "resident", "--compile-only")


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        ((*RUN, "--hidden", "1e9"), HIDDEN),
        ((*RUN, "--hidden", str(2**40)), HIDDEN_2_40),
        ((*RUN, "--seq", "1e9"), SEQ),
        ((*RUN, "--vocab", "1e12"), VOCAB),
        ((*RUN, "--seed", "4294967296"), SEED),
        (("run", "onchip", "--seed", "4294967296"), SEED),
        ((*SWEEP, "--param", "hidden=64,1e9"), HIDDEN),
        ((*SWEEP, "--seq", "1e9", "--param", "hidden=64,128"), SEQ),
        ((*SWEEP, "--param", "vocab=128,1e12"), VOCAB),
        (("advise", "gpt", "--set", "hidden=64,1e9"), HIDDEN),
        (("advise", "gpt", "--fix", "seq=1e9"), SEQ),
        (("advise", "gpt", "--fix", "vocab=1e12"), VOCAB),
    ],
    ids=["run hidden", "run hidden 2**40", "run seq", "run vocab", "run gpt seed", "run mnist seed", "sweep hidden",
         "sweep seq", "sweep vocab", "advise set hidden", "advise fix seq", "advise fix vocab"],
)
def test_absurd_sizes_are_refused_by_every_command(args, stderr, empty_cwd) -> None:
    code, out, err = _run(*args)
    assert (code, err) == (2, stderr)
    assert os.listdir(empty_cwd) == []  # no run directory


def test_a_causal_mask_past_this_machine_is_refused_before_the_run(empty_cwd, monkeypatch) -> None:
    monkeypatch.setattr("workloads._gpt_limits.machine_memory_bytes", lambda: 24 * GIB)
    code, _, err = _run(*RUN, "--seq", "1048576")
    assert code == 2
    assert err == ("profcompare: error: --seq 1048576 needs about 14 TB of host memory to build the seq x seq causal "
                   "mask (even with --compile-only); this machine has 24 GiB\n")
    assert os.listdir(empty_cwd) == []


def test_a_program_past_int64_bytes_is_refused(empty_cwd) -> None:
    code, _, err = _run(*RUN, "--layers", "16384", "--hidden", "1048576", "--seq", "65536")
    assert code == 2
    assert err == ("profcompare: error: --layers 16384, --hidden 1048576, --seq 65536 makes a program of about 14 EB, "
                   "more than the 9.2 EB the compile model's int64 byte counts can hold\n")
    assert os.listdir(empty_cwd) == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: profcompare.run(["resident"], workload="gpt", compile_only=True, hidden="1e9"),
         HIDDEN.removeprefix("profcompare: error: ").rstrip()),
        (lambda: profcompare.run(["resident"], workload="gpt", compile_only=True, knobs={"vocab": 10**12}),
         VOCAB.removeprefix("profcompare: error: ").rstrip()),
        (lambda: profcompare.advise("gpt", fixed={"seq": "1e9"}),
         SEQ.removeprefix("profcompare: error: ").rstrip()),
    ],
    ids=["run hidden", "run vocab", "advise seq"],
)
def test_the_notebook_api_refuses_absurd_sizes(call, message, empty_cwd) -> None:
    with pytest.raises(WorkloadError) as caught:
        call()
    assert str(caught.value) == message
    assert os.listdir(empty_cwd) == []


def _gpt(**overrides: object) -> dict:
    return {**parse_knobs(find_variant("resident"), {}), **overrides}


def test_mask_host_bytes_is_thirteen_bytes_per_element_over_the_base() -> None:
    assert mask_host_bytes(_gpt(seq=1024)) - mask_host_bytes(_gpt(seq=0)) == 13 * 1024 * 1024


def test_program_bytes_of_the_default_gpt() -> None:
    # params: (128 + 16) x 64 embeddings + 2 x (12 x 64^2 + 13 x 64) + 2 x 64 = 109,312
    # per layer: 4 x (16 x 32 tokens x 64 + 3 x 4 heads x 2 x 16^2) = 155,648; head 4 x 3 x 32 x 128 = 49,152
    # 4 replicas (tp 2 x dp 2) x (16 x 109,312 + 2 x 155,648 + 49,152)
    assert program_bytes(_gpt()) == 4 * (16 * 109_312 + 2 * 155_648 + 49_152) == 8_437_760


def test_check_size_names_only_the_changed_knobs() -> None:
    defaults = _gpt()
    with pytest.raises(WorkloadError, match=r"^--seq 40000 needs about 20 GiB of host memory to build the seq x seq "
                                            r"causal mask \(even with --compile-only\); this machine has 16 GiB$"):
        check_size(_gpt(seq=40_000), defaults, memory=16 * GIB)
    check_size(_gpt(seq=2048, hidden=12288, heads=96), defaults, memory=16 * GIB)


def test_a_sweep_grid_past_the_point_limit_is_refused_before_any_point_is_checked(empty_cwd) -> None:
    values = ",".join(str(v) for v in range(1, 301))
    code, _, err = _run("sweep", "onchip", "--param", f"hidden={values}", "--param", f"layers={values}")
    assert (code, err) == (2, "profcompare: error: the --param grid has 90,000 points, more than the 65,536 a sweep "
                              "runs; sweep fewer values\n")
    assert os.listdir(empty_cwd) == []


def test_an_advise_space_past_the_candidate_limit_is_refused_before_it_is_expanded(monkeypatch) -> None:
    import workloads.gpt as gpt
    from profcompare.advisor import space as space_module
    from profcompare.backend.knobs import SearchContext

    monkeypatch.setattr(space_module, "MAX_SPACE_CANDIDATES", 1000)
    checked: list[object] = []
    monkeypatch.setattr(space_module, "_candidate", lambda *args: checked.append(args))
    hidden = [str(64 * i) for i in range(1, 11)]
    with pytest.raises(WorkloadError) as caught:
        space_module.expand_space(gpt.ADVISE, find_variant("resident"), SearchContext(16, 16),
                                  set_values={"hidden": hidden})
    assert str(caught.value).startswith("the space has 7,200 candidate layouts, more than the 1,000 advise expands; ")
    assert checked == []
