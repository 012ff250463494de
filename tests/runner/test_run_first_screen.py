"""``profcompare run`` on a terminal: the first screen answers (headline first and last, the
verdict, the largest moves, the page to open) within 50 lines of 80 columns; --full prints what
a pipe gets (the golden text); --section prints the named sections of each comparison."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from profcompare.cli import cli
from profcompare.commands import _common
from profcompare.render.screen import screen_rows

GOLDEN = Path(__file__).parent / "golden"

#: the main job's headline: peak liveness 56.8 -> 55.7 MiB (-1.9%), time per session.run
#: 1.776 -> 3.850 ms (2.2x), no tile over budget on either side
MAIN_HEADLINE = "offchip-sharded vs onchip: 1.9% less peak liveness, 2.2x slower; both fit"


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Standard output is an 80-column terminal without colour."""
    monkeypatch.setattr(_common, "stdout_is_tty", lambda: True)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")


def _run(args: list[str]) -> Result:
    return CliRunner().invoke(cli, ["run", *args, "--backend", "sim", "-q"])


def _screen_lines(text: str) -> list[str]:
    """The lines of a first screen, checked to fit 50 rows of 80 columns: a path wider than the
    screen stays whole on a line of its own (to be copied) and takes the rows it wraps to."""
    lines = text.splitlines()
    assert screen_rows(text, 80) <= 50, text
    wide = [line for line in lines if len(line) > 80]
    assert all(line.startswith("  /") and " " not in line.strip() for line in wide), wide
    return lines


@pytest.fixture(scope="module")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``profcompare run onchip offchip-sharded`` with the default knobs on an 80-column terminal,
    then ``compare`` of its two variants on the same terminal."""
    out = tmp_path_factory.mktemp("main-job-screen")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
        patch.delenv("PROFCOMPARE_BACKEND", raising=False)
        patch.setattr(_common, "stdout_is_tty", lambda: True)
        patch.setenv("COLUMNS", "80")
        patch.setenv("NO_COLOR", "1")
        # with the progress display: the screen leaves room for what it leaves on the terminal
        run = CliRunner().invoke(cli, ["run", "onchip", "offchip-sharded", "--out", str(out), "--name", "t1",
                                       "--backend", "sim"])
        assert run.exit_code == 0, run.output + repr(run.exception)
        compared = CliRunner().invoke(cli, ["compare", str(out / "t1" / "onchip"), str(out / "t1" / "offchip-sharded")])
        assert compared.exit_code == 0, compared.output
    return {"run": run.stdout, "stderr": run.stderr, "compare": compared.stdout, "dir": (out / "t1").resolve()}


def test_the_main_job_answers_on_one_screen(main_job: dict[str, Any]) -> None:
    lines = _screen_lines(main_job["run"])
    assert lines[0] == MAIN_HEADLINE and lines[-1] == MAIN_HEADLINE and lines[-2] == ""
    text = " ".join(main_job["run"].split())
    titles = [t for t in ("Verdict", "Where the memory moved", "Variants", "Next") if f"\n{t}\n" in main_job["run"]]
    assert titles == ["Verdict", "Where the memory moved", "Variants", "Next"]
    assert "- fc2.weight optimizer_state: 3.0 MiB not-always-live (steps 79-2032) -> 384.0 KiB Streaming Memory" in text
    page = main_job["dir"] / "compare-onchip-vs-offchip-sharded.html"
    assert f"- open the whole comparison (ledger, execution trace, liveness, variables, code): {page} " in text
    assert page.is_file() and f"  {page}" in lines  # whole, on a line of its own
    assert ("- every table here (or one: --section NAME): profcompare compare "
            f"{main_job['dir'] / 'onchip'} {main_job['dir'] / 'offchip-sharded'} --full") in text


def test_the_screen_leaves_room_for_the_progress_display(main_job: dict[str, Any]) -> None:
    # above the screen: the backend line (two rows at 80 columns), a progress line per variant and
    # one for the comparisons
    assert main_job["stderr"].startswith("backend: sim -- the embedded simulator")
    assert screen_rows(main_job["run"], 80) <= 50 - 2 - 3


def test_compare_of_the_main_job_answers_on_one_screen(main_job: dict[str, Any]) -> None:
    lines = _screen_lines(main_job["compare"])
    assert lines[0] == MAIN_HEADLINE and lines[-1] == MAIN_HEADLINE
    page = main_job["dir"] / "compare-onchip-vs-offchip-sharded.html"
    assert f"  {page}" in lines and "- open the whole comparison as a page" in main_job["compare"]


def _scrub(text: str, run_dir: Path) -> str:
    """The run's text without what changes from run to run: timings and the run directory."""
    text = text.replace(str(run_dir.resolve()), "<RUN>")
    text = re.sub(r"(?m)^(fake-\S+\s+ok)((?:\s+\d+\.\d\d){3})", lambda m: m.group(1) + " T T T", text)
    return re.sub(r"\(backend sim, \d+\.\d s wall\)", "(backend sim, T s wall)", text)


def _check_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PROFCOMPARE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs (PROFCOMPARE_UPDATE_GOLDEN=1 to update)"


def test_full_prints_every_table_as_before(fake_registry: object, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # to a pipe without a width: the whole text, as run printed it before the first screen existed
    # (the golden file; only the variables table's order and notes changed since)
    monkeypatch.delenv("COLUMNS", raising=False)
    full = _run(["fake-small", "fake-big", "--out", str(tmp_path), "--name", "r", "--set", "size=2048", "--full"])
    assert full.exit_code == 0, full.output
    _check_golden("run_fake_full.txt", _scrub(full.stdout, tmp_path / "r"))
    # on an 80-column terminal --full prints what a pipe of that width gets by default
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")
    piped = _run(["fake-small", "fake-big", "--out", str(tmp_path), "--name", "p", "--set", "size=2048"])
    monkeypatch.setattr(_common, "stdout_is_tty", lambda: True)
    monkeypatch.setattr("profcompare.commands.run.stdout_is_tty", lambda: True)
    shown = _run(["fake-small", "fake-big", "--out", str(tmp_path), "--name", "t", "--set", "size=2048", "--full"])
    assert "To fit 80 columns" in piped.stdout
    assert _scrub(shown.stdout, tmp_path / "t") == _scrub(piped.stdout, tmp_path / "p")


def test_a_run_of_two_fake_variants_on_a_terminal(fake_registry: object, tmp_path: Path, terminal: None) -> None:
    result = _run(["fake-small", "fake-big", "--out", str(tmp_path), "--name", "r", "--set", "size=2048"])
    assert result.exit_code == 0, result.output
    lines = _screen_lines(result.stdout)
    assert lines[0].startswith("fake-big vs fake-small: ") and lines[-1] == lines[0]
    assert "\nVariants\n" in result.stdout and "report / error" not in result.stdout


def test_a_run_of_several_variants_on_a_terminal(fake_registry: object, tmp_path: Path, terminal: None) -> None:
    result = _run(["fake-small", "fake-big", "fake-broken", "fake-oom-allowed", "--out", str(tmp_path), "--name", "r",
                   "--jobs", "2"])
    assert result.exit_code == 1
    # failures are said on stderr before the screen, so the screen still ends with the headline
    assert "fake-broken: failed: broken on purpose" in result.stderr
    _screen_lines(result.stdout)  # fits the screen
    headline = ("4 variants against fake-small: 2 of 4 fit (fake-oom-allowed do NOT), fake-broken failed; least peak "
                "liveness fake-small (the base); fastest fake-small (the base)")
    assert " ".join(result.stdout.split()).startswith(headline + " Verdict ---")
    assert " ".join(result.stdout.split()).endswith(headline)
    assert (f"- open the variants side by side, linked to each comparison with fake-small: "
            f"{(tmp_path / 'r' / 'index.html').resolve()}") in " ".join(result.stdout.split())


def test_a_run_of_one_variant_on_a_terminal(fake_registry: object, tmp_path: Path, terminal: None) -> None:
    result = _run(["fake-small", "--out", str(tmp_path), "--name", "r"])
    assert result.exit_code == 0, result.output
    lines = _screen_lines(result.stdout)
    assert lines[0] == lines[-1] == "fake-small: the only variant, nothing compared; fits"
    assert (f"- open the run's page (its figures and memory ledger): {(tmp_path / 'r' / 'index.html').resolve()}"
            in " ".join(result.stdout.split()))


def test_section_prints_the_named_sections_of_each_comparison(fake_registry: object, tmp_path: Path,
                                                             terminal: None) -> None:
    result = _run(["fake-small", "fake-big", "fake-oom-allowed", "--out", str(tmp_path), "--name", "r",
                   "--section", "ledger"])
    assert result.exit_code == 1  # fake-oom-allowed ran out of memory
    out = result.stdout
    assert out.count("\nMemory ledger\n") == 2 and "\nVerdict\n" not in out and "\nVariants\n" not in out
    assert out.index("fake-small (base) vs fake-big (new)") < out.index("fake-small (base) vs fake-oom-allowed (new)")


def test_a_bad_section_fails_before_anything_runs(fake_registry: object, tmp_path: Path) -> None:
    result = _run(["fake-small", "fake-big", "--out", str(tmp_path), "--name", "r", "--section", "nope"])
    assert result.exit_code == 2
    assert "Invalid value for '--section': 'nope' is not one of 'verdict', 'config', 'moves'," in result.output
    both = _run(["fake-small", "fake-big", "--out", str(tmp_path), "--name", "r", "--section", "moves", "--full"])
    assert both.exit_code == 2 and "--section prints the named sections only; drop --full" in both.output
    assert not (tmp_path / "r").exists()
