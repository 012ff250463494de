"""Every numeric option of every command declares its range, and a value outside it is refused
before anything runs: exit 2, one line naming the option, nothing written.

The options are enumerated from the click command objects, so an option added later is covered
without touching this file; a numeric option without a range fails the first test.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profcompare.cli import cli
from profcompare.commands.api import check_option_ranges
from profcompare.errors import WorkloadError

_NUMBER_TYPES = (click.types.IntParamType, click.types.FloatParamType)


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


NUMERIC_OPTIONS = [
    (path, param)
    for path, command in _commands(cli)
    for param in command.params
    if isinstance(param, click.Option) and isinstance(param.type, _NUMBER_TYPES)
]


def _label(path: tuple[str, ...], param: click.Option) -> str:
    return " ".join(path) + " " + param.opts[0]


def test_the_commands_have_numeric_options_and_each_declares_a_range() -> None:
    labels = {_label(path, param) for path, param in NUMERIC_OPTIONS}
    assert {"advise --seed", "advise --jobs", "run --jobs", "sweep --jobs", "compare --noise-pct"} <= labels
    for path, param in NUMERIC_OPTIONS:
        assert isinstance(param.type, (click.IntRange, click.FloatRange)), f"{_label(path, param)} has no range"
        assert param.type.min is not None, f"{_label(path, param)} has no lower bound"


def _outside(param_type: click.IntRange | click.FloatRange) -> st.SearchStrategy[float | int]:
    """Values below the minimum or above the maximum of ``param_type``."""
    low, high = param_type.min, param_type.max
    if isinstance(param_type, click.IntRange):
        below = st.integers(max_value=int(low) - 1, min_value=int(low) - 2**70)
        return below if high is None else below | st.integers(min_value=int(high) + 1, max_value=int(high) + 2**70)
    below_f = st.floats(max_value=float(low), exclude_max=True, allow_nan=False)
    if high is None:
        return below_f
    return below_f | st.floats(min_value=float(high), exclude_min=True, allow_nan=False)


def _text(value: float | int) -> str:
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


@pytest.fixture(scope="module")
def empty_cwd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An empty working directory (the default output root, ``reports``, is relative to it)."""
    directory = tmp_path_factory.mktemp("cwd")
    before = os.getcwd()
    os.chdir(directory)
    try:
        yield str(directory)
    finally:
        os.chdir(before)


@pytest.mark.parametrize(("path", "param"), NUMERIC_OPTIONS, ids=[_label(p, o) for p, o in NUMERIC_OPTIONS])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_out_of_range_option_is_refused_in_one_line(path, param, data, run_cli, empty_cwd) -> None:
    value = data.draw(_outside(param.type), label=_label(path, param))
    # the option first: click converts it before any argument, so none need to be valid
    outcome = run_cli(*path, f"{param.opts[0]}={_text(value)}")
    assert outcome.exception is None
    assert outcome.exit_code == 2, outcome.stderr
    assert outcome.stdout == ""
    assert len(outcome.stderr.splitlines()) == 1, outcome.stderr
    assert outcome.stderr.startswith(f"profcompare: error: Invalid value for '{param.opts[0]}'")
    assert "is not in the range" in outcome.stderr
    assert os.listdir(empty_cwd) == []


def test_advise_seed_past_numpys_range_is_a_usage_error(run_cli, empty_cwd) -> None:
    # was exit 70: "internal error (ValueError: Seed must be between 0 and 2**32 - 1)"
    outcome = run_cli("advise", "gpt", "--budget-points", "1", "--seed", "4294967296")
    assert outcome.exit_code == 2
    assert outcome.stderr == ("profcompare: error: Invalid value for '--seed': 4294967296 is not in the range "
                              "0<=x<=4294967295. (see 'profcompare advise --help')\n")
    assert os.listdir(empty_cwd) == []


def test_a_local_dask_cluster_is_bounded_like_jobs(run_cli, empty_cwd, monkeypatch) -> None:
    # was: a LocalCluster of 10**20 workers being started, once the space was expanded
    from profcompare.runner.dask_engine import DaskEngine

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a Dask cluster was started")

    monkeypatch.setattr(DaskEngine, "connect", refuse)
    outcome = run_cli("advise", "mnist", "--dask", "local:100000000000000000000")
    assert outcome.exit_code == 2
    assert outcome.stderr == ("profcompare: error: bad --dask 'local:100000000000000000000': local:N needs a worker "
                              "count N from 1 to 1024 (e.g. local:2)\n")
    assert os.listdir(empty_cwd) == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda pc: pc.advise("gpt", seed=2**32, budget=1), r"^bad seed=4294967296: 4294967296 is not in the range 0<=x<=4294967295\.$"),
        (lambda pc: pc.advise("mnist", jobs=0), r"^bad jobs=0: 0 is not in the range 1<=x<=1024\.$"),
        (lambda pc: pc.advise("mnist", ipus=4096), r"^bad ipus=4096: 4096 is not in the range 1<=x<=1024\.$"),
        (lambda pc: pc.run(["onchip"], jobs=2000), r"^bad jobs=2000: 2000 is not in the range 1<=x<=1024\.$"),
    ],
    ids=["advise seed", "advise jobs", "advise ipus", "run jobs"],
)
def test_the_notebook_api_is_held_to_the_same_ranges(call, message, empty_cwd) -> None:
    import profcompare

    with pytest.raises(WorkloadError, match=message):
        call(profcompare)
    assert os.listdir(empty_cwd) == []


def test_check_option_ranges_leaves_none_and_unknown_names_alone() -> None:
    from profcompare.commands.advise import command

    check_option_ranges(command, {"seed": None, "budget": 5, "pages": object(), "set_values": {"a": ["1"]}})
