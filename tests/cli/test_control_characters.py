"""Names from report files never reach a terminal, markdown or csv with their control characters."""

from __future__ import annotations

import pathlib

import pytest
from cli_sample_reports import build_report

from profcompare.readers.store import write_report
from profcompare.render.control_chars import one_line, visible

EVIL = "fc1/\x1b[2J\x1b]0;pwned\x07\u202eevil\x9b31m\r\nname"
RAW = ("\x1b", "\x07", "\u202e", "\x9b", "\r")


def test_visible_spells_every_control_character() -> None:
    assert visible("a\x1b[31mb") == "a\\x1b[31mb"
    assert visible("\x00\x7f\x9f") == "\\x00\\x7f\\x9f"
    assert visible("left\u202eright\u2066x\u2069") == "left\\u202eright\\u2066x\\u2069"
    assert visible("fc1.weight/Ä ok") == "fc1.weight/Ä ok"  # printable text, including non-ASCII, is untouched
    assert one_line("first\nsecond\r\nthird\x1b") == "first second third\\x1b"


@pytest.fixture(scope="module")
def evil_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("evil")
    paths = []
    for variant, size in (("onchip", 9_000_000), ("offchip-sharded", 12_000_000)):
        (root / variant).mkdir()
        report = build_report(variant, extra_variables=[(EVIL, size)])
        paths.append(str(write_report(report, root / variant / "profile.sqlite")))
    return paths[0], paths[1]


@pytest.mark.parametrize(
    "args",
    [
        ("show", "{base}"),
        ("show", "{base}", "--format", "markdown"),
        ("variables", "{base}"),
        ("variables", "{base}", "--format", "csv"),
        ("variables", "{base}", "--format", "markdown"),
        ("compare", "{base}", "{new}"),
        ("compare", "{base}", "{new}", "--format", "markdown"),
        ("compare", "{base}", "{new}", "--format", "csv"),
    ],
)
def test_outputs_escape_control_characters_in_names(run_cli, evil_pair: tuple[str, str], args: tuple[str, ...]) -> None:
    base, new = evil_pair
    out = run_cli(*(a.format(base=base, new=new) for a in args))
    assert out.exit_code == 0, out.stderr
    assert not any(raw in out.stdout for raw in RAW)
    assert "\\x1b" in out.stdout and "\\u202e" in out.stdout and "\\x9b" in out.stdout


def test_html_isolates_names(run_cli, evil_pair: tuple[str, str], tmp_path: pathlib.Path) -> None:
    base, new = evil_pair
    out = run_cli("compare", base, new, "--format", "html", "-o", str(tmp_path / "d.html"))
    assert out.exit_code == 0, out.stderr
    page = (tmp_path / "d.html").read_text(encoding="utf-8")
    assert "unicode-bidi: isolate" in page


def test_the_first_screen_escapes_control_characters_in_labels(run_cli, tmp_path: pathlib.Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from profcompare.commands import _common

    paths = []
    for variant in ("onchip", "offchip-sharded"):
        report = build_report(variant)
        report = report.with_meta(report.meta.replace(variant=f"{variant}{EVIL}"))
        (tmp_path / variant).mkdir()
        paths.append(str(write_report(report, tmp_path / variant / "profile.sqlite")))
    monkeypatch.setattr(_common, "stdout_is_tty", lambda: True)
    monkeypatch.setenv("NO_COLOR", "1")
    out = run_cli("compare", *paths)
    assert out.exit_code == 0, out.stderr
    assert not any(raw in out.stdout for raw in RAW)
    lines = out.stdout.splitlines()
    # the headline (wrapped: the labels are long) opens and closes the screen, its names made visible
    assert lines[0].startswith("offchip-sharded") and "\\x1b" in lines[0] and out.stdout.count(lines[0] + "\n") == 2
    assert lines[-1].endswith("both fit") and lines[-1] in lines[:3]
