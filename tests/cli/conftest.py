"""Fixtures of the CLI tests: the two sample reports written as store files, and a runner.

The runner calls ``profcompare.cli.main`` (not the click group directly), so the tests see
exactly what a user sees: one-line errors, exit codes, stdout and stderr apart.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass

import click
import pytest
from cli_sample_reports import build_report
from click.testing import CliRunner

from profcompare.cli import main
from profcompare.readers.store import write_report


@dataclass(frozen=True)
class Outcome:
    """What one CLI invocation did."""

    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                 "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def _entry(args: tuple[str, ...]) -> None:
    raise SystemExit(main(list(args)))


@pytest.fixture
def run_cli() -> Callable[..., Outcome]:
    """Return ``run_cli(*args)``: run the profcompare CLI in-process and return an Outcome."""

    def run(*args: str) -> Outcome:
        result = CliRunner().invoke(_entry, list(args), catch_exceptions=True)
        exception = result.exception if not isinstance(result.exception, SystemExit) else None
        return Outcome(result.exit_code, result.stdout, result.stderr, exception)

    return run


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A directory with onchip/profile.sqlite and offchip-sharded/profile.sqlite."""
    root = tmp_path_factory.mktemp("reports")
    for variant in ("onchip", "offchip-sharded"):
        (root / variant).mkdir()
        write_report(build_report(variant), root / variant / "profile.sqlite")
    return root


@pytest.fixture(scope="session")
def onchip_path(report_dir: pathlib.Path) -> str:
    return str(report_dir / "onchip" / "profile.sqlite")


@pytest.fixture(scope="session")
def offchip_path(report_dir: pathlib.Path) -> str:
    return str(report_dir / "offchip-sharded")
