"""``compare`` on a terminal prints the first screen; --full, --brief and --section choose what
the text shows; the file formats stay complete."""

from __future__ import annotations

import pathlib
import re
import shutil
from collections.abc import Callable

import pytest

from profcompare.commands import _common
from profcompare.render.section_names import SECTION_NAMES

Run = Callable[..., "object"]

HEADLINE = "offchip-sharded vs onchip: 9.3% less peak liveness, 1.08x slower; both fit"


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Standard output is an 80-column terminal without colour."""
    monkeypatch.setattr(_common, "stdout_is_tty", lambda: True)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")


def _one_line_error(outcome: object, pattern: str, code: int = 2) -> None:
    lines = outcome.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert outcome.exit_code == code and outcome.exception is None  # type: ignore[attr-defined]
    assert len(lines) == 1 and lines[0].startswith("profcompare: error: "), lines
    assert re.search(pattern, lines[0]), lines[0]


def test_compare_on_a_terminal_prints_one_screen(run_cli: Run, terminal: None, onchip_path: str,
                                                 offchip_path: str) -> None:
    out = run_cli("compare", onchip_path, offchip_path)
    assert out.exit_code == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) <= 50 and max(map(len, lines)) <= 80
    assert lines[0] == HEADLINE and lines[-1] == HEADLINE
    text = " ".join(out.stdout.split())
    # no page of a run beside these reports: the command that writes one, and the one printing every table
    assert (f"- the whole comparison as a page (ledger, execution trace, liveness): profcompare compare {onchip_path} "
            f"{offchip_path} --format html -o compare.html") in text
    assert f"- every table here (or one: --section NAME, see --help): profcompare compare {onchip_path} {offchip_path} " \
        "--full" in text
    assert "Summary" not in text and "Variables" not in text


def test_the_screen_names_the_page_run_wrote(run_cli: Run, terminal: None, report_dir: pathlib.Path,
                                             tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variant in ("onchip", "offchip-sharded"):
        shutil.copytree(report_dir / variant, tmp_path / variant)
    (tmp_path / "compare-onchip-vs-offchip-sharded.html").write_text("<!doctype html>")
    monkeypatch.chdir(tmp_path)
    out = run_cli("compare", "onchip/profile.sqlite", "offchip-sharded")
    assert out.exit_code == 0, out.stderr
    assert ("- open the whole comparison as a page (ledger, execution trace, liveness, variables, code): "
            "compare-onchip-vs-offchip-sharded.html") in " ".join(out.stdout.split())
    # the other order is another page, which run did not write
    assert "- open" not in run_cli("compare", "offchip-sharded", "onchip").stdout


def test_full_on_a_terminal_prints_what_a_file_gets(run_cli: Run, terminal: None, onchip_path: str,
                                                     offchip_path: str, tmp_path: pathlib.Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    full = run_cli("compare", onchip_path, offchip_path, "--full", "--top", "5")
    target = tmp_path / "compare.txt"
    assert run_cli("compare", onchip_path, offchip_path, "--top", "5", "-o", str(target)).exit_code == 0
    # the file is whole (no width), the terminal fitted to 80 columns: the same sections, in the same order
    titles = [f"\n{title}\n" for title in SECTION_NAMES.values() if f"\n{title}\n" in target.read_text()]
    assert len(titles) >= 12 and all(title in full.stdout for title in titles)
    assert [full.stdout.index(t) for t in titles] == sorted(full.stdout.index(t) for t in titles)
    # a pipe of the same width gets exactly what --full prints on the terminal
    monkeypatch.setattr(_common, "stdout_is_tty", lambda: False)
    assert run_cli("compare", onchip_path, offchip_path, "--top", "5").stdout == full.stdout


def test_full_is_the_golden_text(run_cli: Run, report_dir: pathlib.Path, onchip_path: str, offchip_path: str) -> None:
    out = run_cli("compare", onchip_path, offchip_path, "--top", "5", "--full")
    assert out.exit_code == 0, out.stderr
    text = re.sub(r"profcompare-sim \d+\.\d+\.\d+[\w.+-]*", "profcompare-sim X.Y.Z", out.stdout.replace(str(report_dir), "<REPORTS>"))
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?", "<TIMESTAMP>", text)
    assert text == (pathlib.Path(__file__).parent / "golden" / "compare_onchip_offchip.txt").read_text(encoding="utf-8")


def test_brief_to_a_pipe_prints_the_screen(run_cli: Run, onchip_path: str, offchip_path: str) -> None:
    out = run_cli("compare", onchip_path, offchip_path, "--brief")
    assert out.exit_code == 0 and out.stdout.startswith(HEADLINE + "\n") and out.stdout.endswith("\n" + HEADLINE + "\n")


def test_section_prints_the_named_sections_in_document_order(run_cli: Run, terminal: None, onchip_path: str,
                                                             offchip_path: str) -> None:
    out = run_cli("compare", onchip_path, offchip_path, "--section", "summary", "--section", "verdict")
    assert out.exit_code == 0, out.stderr
    titles = [line for line, under in zip(out.stdout.splitlines(), out.stdout.splitlines()[1:], strict=False)
              if under and set(under) == {"-"} and len(under) == len(line)]
    assert titles == ["Verdict", "Summary"]
    assert out.stdout.startswith("profcompare comparison: onchip (base) vs offchip-sharded (new)\nSIMULATED:")


@pytest.mark.parametrize(("args", "pattern"), [
    (("--section", "nope"), r"Invalid value for '--section': 'nope' is not one of 'verdict', 'config', 'moves', "),
    (("--section", "verdict", "--full"), r"--section prints the named sections only; drop --full"),
    (("--section", "verdict", "--brief"), r"--section prints the named sections only; drop --brief"),
    (("--section", "verdict", "--format", "json"), r"--section chooses what the text shows; --format json is always "
                                                   r"complete"),
    (("--brief", "--format", "markdown"), r"--brief chooses what the text shows; --format markdown is always complete"),
])
def test_bad_view_options_are_one_line_errors(run_cli: Run, onchip_path: str, offchip_path: str,
                                             args: tuple[str, ...], pattern: str) -> None:
    out = run_cli("compare", onchip_path, offchip_path, *args)
    _one_line_error(out, pattern)
    assert out.stdout == ""


def test_the_file_formats_stay_complete_on_a_terminal(run_cli: Run, terminal: None, onchip_path: str,
                                                      offchip_path: str) -> None:
    markdown = run_cli("compare", onchip_path, offchip_path, "--format", "markdown").stdout
    assert all(f"### {title}" in markdown for title in ("Verdict", "Summary", "Variables", "Tiles"))
    assert run_cli("compare", onchip_path, offchip_path, "--format", "markdown", "--full").stdout == markdown


def test_help_lists_the_section_names(run_cli: Run) -> None:
    text = " ".join(run_cli("compare", "--help").stdout.split())
    assert "--section NAME" in text and ", ".join(SECTION_NAMES) in text
    assert "--full / --brief" in text and "[default: --brief on a terminal, --full to a file or a pipe]" in text
