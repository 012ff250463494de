"""The width of text output: the screen's ($COLUMNS) on stdout, unbounded in a file or a pipe."""

from __future__ import annotations

import pathlib

import pytest
from click.testing import CliRunner
from cli_sample_reports import build_report

from profcompare.cli import main
from profcompare.readers.store import write_report

LONG = "encoder/" * 6 + "layer_norm/weight_sharded_slice_all_gathered"


@pytest.fixture(scope="module")
def long_named(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("wide") / "profile.sqlite"
    write_report(build_report("offchip-sharded", extra_variables=[(LONG, 60_000_000)]), path)
    return str(path)


def _invoke(args: list[str], env: dict[str, str | None]) -> tuple[int, str]:
    import click

    @click.command(context_settings={"ignore_unknown_options": True})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def entry(args: tuple[str, ...]) -> None:
        raise SystemExit(main(list(args)))

    result = CliRunner().invoke(entry, args, env=env)
    return result.exit_code, result.stdout


@pytest.mark.parametrize("command", ["show", "variables"])
def test_columns_set_fits_stdout_to_it(command: str, long_named: str) -> None:
    code, out = _invoke([command, long_named], {"COLUMNS": "80"})
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    assert LONG not in out and "long names shortened" in " ".join(out.split())


@pytest.mark.parametrize("command", ["show", "variables"])
def test_a_pipe_without_columns_and_a_file_get_whole_tables(command: str, long_named: str,
                                                             tmp_path: pathlib.Path) -> None:
    code, out = _invoke([command, long_named], {"COLUMNS": None})
    assert code == 0 and LONG in out and "\u2026" not in out
    target = tmp_path / "out.txt"
    code, _ = _invoke([command, long_named, "-o", str(target)], {"COLUMNS": "80"})
    written = target.read_text(encoding="utf-8")
    assert code == 0 and LONG in written and "To fit" not in written
    assert max(len(line) for line in written.splitlines()) > 80
