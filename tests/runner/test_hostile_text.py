"""Text from run directories and from child processes reaches the terminal escaped and on one line:
``runs`` (names and every run.json field), and the failure lines of ``run`` and ``profile``; a
status that is not ok, oom or failed is shown as unknown, never as ok."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_workloads import HOSTILE_ERROR

from profcompare import runner
from profcompare.cli import cli, main

#: characters that act on a terminal (ESC, BEL) or reorder what it shows (RIGHT-TO-LEFT OVERRIDE)
RAW_CONTROLS = ("\x1b", "\x07", "\u202e", "\x9b")


def _no_raw_controls(text: str) -> None:
    found = sorted({c for c in RAW_CONTROLS if c in text})
    assert not found, f"raw control characters reached the output: {found!r}"


def _rows(output: str) -> dict[str, list[str]]:
    """The rows of the ``runs`` table by run name: the stripped cells of each line, cut at the
    columns' starts in the header line (the table's columns are left-aligned text)."""
    lines = output.splitlines()
    header = next(line for line in lines if line.startswith("run "))
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    rows = {}
    for line in lines[lines.index(header) + 1:]:
        if not line.strip() or set(line.strip()) <= {"\u2500", "-"}:
            continue
        cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [len(line)])]
        if cells[0]:
            rows[cells[0]] = cells
    return rows


def _job(out: Path, run: str, label: str, info: dict[str, object]) -> None:
    job = out / run / label
    job.mkdir(parents=True)
    (job / "run.json").write_text(json.dumps(info))


def test_runs_escapes_names_and_fields_and_never_calls_an_unknown_status_ok(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    _job(out, "evil\x1b[31m\u202e", "v\x9bj", {"variant": "x\u202ey", "backend": "sim\x1b[2J", "status": "ok",
                                                "started": "2026-11-20T10\x07:00:00+00:00"})
    _job(out, "weird", "fake-small", {"variant": "fake-small", "backend": "sim", "status": "done\x1b",
                                      "started": "2026-11-21T10:00:00+00:00"})
    _job(out, "nostatus", "fake-small", {"variant": "fake-small", "backend": "sim", "started": "2026-11-22T10:00:00+00:00"})
    _job(out, "number", "fake-small", {"variant": "fake-small", "backend": "sim", "status": 0,
                                       "started": "2026-11-23T10:00:00+00:00"})
    listings = {r.name: r for r in runner.list_runs(out)}
    assert {name: r.status for name, r in listings.items()} == {
        "evil\x1b[31m\u202e": "ok", "weird": "unknown", "nostatus": "unknown", "number": "unknown"}
    result = CliRunner().invoke(cli, ["runs", "--out", str(out)])
    assert result.exit_code == 0, result.output
    _no_raw_controls(result.output)
    rows = _rows(result.output)
    assert rows["evil\\x1b[31m\\u202e"] == ["evil\\x1b[31m\\u202e", "run", "ok", "v\\x9bj", "sim\\x1b[2J",
                                           "2026-11-20 10\\x07:00:0"]
    assert rows["weird"][1:4] == ["run", "unknown", "fake-small (unknown status 'done\\x1b')"]
    assert rows["nostatus"][1:4] == ["run", "unknown", "fake-small (unknown status)"]
    assert rows["number"][1:4] == ["run", "unknown", "fake-small (unknown status 0)"]


def test_a_sweeps_unknown_point_status_is_listed_as_such(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    _job(out, "s", "p1", {"variant": "offchip", "backend": "sim", "status": "ok", "started": "2026-11-20T10:00:00+00:00"})
    _job(out, "s", "p2", {"variant": "offchip", "backend": "sim", "status": "OK", "started": "2026-11-20T10:00:01+00:00"})
    (out / "s" / "sweep.json").write_text(json.dumps({"swept": ["thr\x1b[5m"]}))
    result = CliRunner().invoke(cli, ["runs", "--out", str(out)])
    _no_raw_controls(result.output)
    assert _rows(result.output)["s"][1:4] == ["sweep", "unknown", "offchip: 2 points over thr\\x1b[5m; p2 (unknown status 'OK')"]


def test_run_failure_lines_are_one_line_and_escaped_and_run_json_keeps_the_full_text(
    fake_registry: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "reports"
    code = main(["run", "fake-small", "fake-hostile-error", "--backend", "sim", "--out", str(out), "--name", "r"])
    captured = capsys.readouterr()
    assert code == 1
    _no_raw_controls(captured.out + captured.err)
    failures = [line for line in captured.err.splitlines() if line.startswith("profcompare: ")]
    escaped = "first line second \\x1b[2J\\x1b]0;owned\\x07 line \\u202eright-to-left"
    assert failures == [f"profcompare: fake-hostile-error: failed: {escaped} (log: {out / 'r' / 'fake-hostile-error' / 'run.log'})"]
    (row,) = [line for line in captured.out.splitlines() if line.lstrip().startswith("fake-hostile-error")]
    assert escaped in row
    assert runner.read_run_json(out / "r" / "fake-hostile-error")["error"] == HOSTILE_ERROR
    assert HOSTILE_ERROR in (out / "r" / "fake-hostile-error" / "run.log").read_text()


def test_profile_failure_lines_are_one_line_and_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROFCOMPARE_BACKEND", "sim")
    (tmp_path / "prog.py").write_text(textwrap.dedent(
        f"""
        raise RuntimeError({HOSTILE_ERROR!r})
        """
    ))
    code = main(["profile", "-q", "--out", "runs", "--name", "p", "prog.py"])
    captured = capsys.readouterr()
    assert code == 1
    _no_raw_controls(captured.out + captured.err)
    failures = [line for line in captured.err.splitlines() if line.startswith("profcompare: ")]
    assert failures == ["profcompare: prog: failed: RuntimeError: first line second \\x1b[2J\\x1b]0;owned\\x07 line "
                        "\\u202eright-to-left (log: runs/p/prog/run.log)"]
    # the program's traceback follows, line by line, made visible
    assert captured.err.splitlines()[-2:] == ["RuntimeError: first line",
                                              "second \\x1b[2J\\x1b]0;owned\\x07 line \\u202eright-to-left"]
    info = json.loads((tmp_path / "runs" / "p" / "prog" / "run.json").read_text())
    assert info["error"] == f"RuntimeError: {HOSTILE_ERROR}"
