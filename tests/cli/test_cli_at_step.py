"""``profcompare compare BASE NEW --at peak|STEP|REGEX``: the aligned live-at-step view, and its
refusals (one error line, exit status 2, never a traceback)."""

from __future__ import annotations

import json
import re

import pytest

HEADLINE = ("At the peak, step 8 (base, layer3/bwd/matmul) / 16 (new, optimizer/adam): not-always-live "
            "214.3 KiB -> 2.4 MiB (+1033.2%); largest change: layer0.weight remote_staging +588.0 KiB")


def _one_line_error(outcome: object, message: str) -> None:
    assert outcome.exit_code == 2, outcome  # type: ignore[attr-defined]
    assert outcome.exception is None, outcome.exception  # type: ignore[attr-defined]
    assert outcome.stdout == ""  # type: ignore[attr-defined]
    assert outcome.stderr.splitlines() == [f"profcompare: error: {message}"]  # type: ignore[attr-defined]


def test_at_peak_prints_the_aligned_view_instead_of_the_comparison(run_cli, onchip_path: str, offchip_path: str) -> None:
    outcome = run_cli("compare", onchip_path, offchip_path, "--at", "peak")
    assert outcome.exit_code == 0, outcome.stderr
    text = outcome.stdout
    assert text.startswith("profcompare live at a step: onchip (base) vs offchip-sharded (new)\n")
    assert HEADLINE in text
    assert re.search(r"^layer0\.weight +remote_staging +0 B +588\.0 KiB +\+588\.0 KiB +added$", text, re.M)
    assert re.search(r"^layer0/weight/second_moment/staging +layer0\.weight +remote_staging .* 15-17$", text, re.M)
    assert "Verdict" not in text  # not the whole comparison


def test_at_a_step_as_markdown_and_json(run_cli, onchip_path: str, offchip_path: str) -> None:
    markdown = run_cli("compare", onchip_path, offchip_path, "--at", "14", "--format", "markdown")
    assert markdown.exit_code == 0, markdown.stderr
    assert "- base: step 14, grad/all\\_reduce (Call), the step asked for" in markdown.stdout
    data = json.loads(run_cli("compare", onchip_path, offchip_path, "--at", "adam", "--format", "json").stdout)
    assert (data["steps"]["base"]["step"], data["steps"]["new"]["step"]) == (15, 16)
    assert data["steps"]["base"]["how"] == data["steps"]["new"]["how"] == "match"


@pytest.mark.parametrize(("at", "message"), [
    ("99", "no step 99 in onchip (its steps are 0-15)"),
    ("no_such_program", "no program of onchip or offchip-sharded matches --at 'no_such_program'"),
    ("layer[0", "--at 'layer[0' is not a valid regular expression: unterminated character set at position 5"),
    ("", "--at needs peak, a step number or a regular expression for program names"),
])
def test_a_selector_naming_no_step_is_one_error_line(run_cli, onchip_path: str, offchip_path: str, at: str,
                                                     message: str) -> None:
    _one_line_error(run_cli("compare", onchip_path, offchip_path, "--at", at), message)


def test_at_refuses_html_and_section(run_cli, onchip_path: str, offchip_path: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    page = tmp_path / "at.html"
    _one_line_error(run_cli("compare", onchip_path, offchip_path, "--at", "peak", "--format", "html", "-o", str(page)),
                    "--at writes text, markdown or json, not --format html (not supported yet)")
    assert not page.exists()
    _one_line_error(run_cli("compare", onchip_path, offchip_path, "--at", "peak", "--section", "summary"),
                    "--at shows what is live at one step; drop --section")
