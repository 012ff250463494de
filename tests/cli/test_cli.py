"""The report commands through the real entry point: show, variables, compare, export."""

from __future__ import annotations

import csv
import io
import json
import os
import pathlib
import re
import sqlite3
import sys
from collections.abc import Callable

import pytest
from cli_sample_reports import build_report

from profcompare.commands import _common
from profcompare.errors import ReportFormatError
from profcompare.readers import open_report
from profcompare.readers import pva as pva_reader

GOLDEN = pathlib.Path(__file__).parent / "golden"

Run = Callable[..., "object"]


def _one_line_error(outcome: object, pattern: str) -> None:
    stderr = outcome.stderr  # type: ignore[attr-defined]
    assert outcome.exit_code != 0  # type: ignore[attr-defined]
    assert outcome.exception is None  # type: ignore[attr-defined]  # no traceback
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("profcompare: error: "), stderr
    assert re.search(pattern, lines[0]), lines[0]


def _scrub(text: str, root: pathlib.Path) -> str:
    text = text.replace(str(root), "<REPORTS>")
    text = re.sub(r"profcompare-sim \d+\.\d+\.\d+[\w.+-]*", "profcompare-sim X.Y.Z", text)
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?", "<TIMESTAMP>", text)


def _check_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PROFCOMPARE_UPDATE_GOLDEN") == "1":
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"golden file {path} is missing; run with PROFCOMPARE_UPDATE_GOLDEN=1 to create it"
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs (PROFCOMPARE_UPDATE_GOLDEN=1 to update)"


# ------------------------------------------------------------------ show


def test_show_text_to_stdout(run_cli: Run, onchip_path: str) -> None:
    out = run_cli("show", onchip_path)
    assert out.exit_code == 0, out.stderr
    assert out.stdout.startswith("profcompare report: onchip\n")
    assert "report:   onchip (simulated, profcompare-sim" in out.stdout
    assert "\x1b[" not in out.stdout  # not a terminal: no colour
    assert out.stderr == ""


@pytest.mark.parametrize("fmt", ["markdown", "json", "csv", "html"])
def test_show_every_format(run_cli: Run, onchip_path: str, fmt: str) -> None:
    out = run_cli("show", onchip_path, "--format", fmt)
    assert out.exit_code == 0, out.stderr
    if fmt == "json":
        assert json.loads(out.stdout)["meta"]["label"] == "onchip"
    elif fmt == "csv":
        assert out.stdout.splitlines()[0] == "metric,unit,value,confidence"
    elif fmt == "markdown":
        assert out.stdout.startswith("## profcompare report: onchip")
    else:
        assert out.stdout.lstrip().lower().startswith("<!doctype html>")


def test_show_json_matches_the_report(run_cli: Run, onchip_path: str) -> None:
    data = json.loads(run_cli("show", onchip_path, "--format", "json").stdout)
    summary = open_report(onchip_path).summary()
    assert data["schema_version"] == 9
    assert data["meta"]["source"] == onchip_path
    peak = data["summary"]["peak_liveness_bytes"]
    assert peak == {"value": int(summary["peak_liveness_bytes"]), "unit": "bytes", "confidence": "modelled"}
    assert data["summary"]["streaming_memory_bytes"]["confidence"] == "exact"
    # every table the HTML shows is in the export, complete
    report = open_report(onchip_path)
    assert len(data["variables"]) == len(report.variables) and data["cut"]["variables"]["cut"] == 0
    assert len(data["tiles"]) == len(report.tiles) and len(data["liveness"]) == len(report.liveness)
    assert {"categories", "code", "phases", "streaming_memory"} <= set(data)


def test_show_writes_a_file_and_keeps_stdout_clean(run_cli: Run, onchip_path: str, tmp_path: pathlib.Path) -> None:
    target = tmp_path / "onchip.md"
    out = run_cli("show", onchip_path, "--format", "markdown", "-o", str(target))
    assert out.exit_code == 0, out.stderr
    assert out.stdout == ""
    assert target.read_text().startswith("## profcompare report: onchip")


def test_dash_means_stdout(run_cli: Run, onchip_path: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = run_cli("show", onchip_path, "--format", "csv", "-o", "-")
    assert out.exit_code == 0
    assert out.stdout.startswith("metric,unit,value")
    assert not (tmp_path / "-").exists()


def test_existing_output_is_not_overwritten_without_force(run_cli: Run, onchip_path: str, tmp_path: pathlib.Path) -> None:
    target = tmp_path / "summary.csv"
    target.write_text("keep me")
    out = run_cli("show", onchip_path, "--format", "csv", "-o", str(target))
    _one_line_error(out, re.escape(f"{target} exists; use --force to overwrite"))
    assert target.read_text() == "keep me"
    out = run_cli("show", onchip_path, "--format", "csv", "-o", str(target), "--force")
    assert out.exit_code == 0
    assert target.read_text().startswith("metric,unit,value")


def test_html_is_not_sent_to_a_terminal(run_cli: Run, onchip_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common, "stdout_is_tty", lambda: True)
    out = run_cli("show", onchip_path, "--format", "html")
    _one_line_error(out, r"not writing HTML to a terminal; give -o FILE\.html")
    assert out.stdout == ""
    forced = run_cli("show", onchip_path, "--format", "html", "-o", "-")
    assert forced.exit_code == 0 and "<html" in forced.stdout.lower()


def test_text_on_a_terminal_is_coloured(run_cli: Run, report_dir: pathlib.Path, onchip_path: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common, "stdout_is_tty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = run_cli("compare", onchip_path, str(report_dir / "offchip-sharded"), "--full")
    assert out.exit_code == 0
    assert "\x1b[31m" in out.stdout  # growth in red
    # the first screen (the default on a terminal) opens and closes with the headline in bold
    brief = run_cli("compare", onchip_path, str(report_dir / "offchip-sharded")).stdout
    assert brief.startswith("\x1b[1moffchip-sharded vs onchip: ") and brief.endswith("both fit\x1b[0m\n")
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run_cli("show", onchip_path).stdout


def test_missing_report_is_a_one_line_error(run_cli: Run, tmp_path: pathlib.Path) -> None:
    out = run_cli("show", str(tmp_path / "nope"))
    _one_line_error(out, r"nope: no such file or directory")
    assert out.exit_code == 2


def test_not_a_report_is_a_one_line_error(run_cli: Run, tmp_path: pathlib.Path) -> None:
    bogus = tmp_path / "profile.sqlite"
    bogus.write_text("this is not a database")
    _one_line_error(run_cli("show", str(bogus)), re.escape(str(bogus)))


def test_bad_format_is_a_one_line_usage_error(run_cli: Run, onchip_path: str) -> None:
    out = run_cli("show", onchip_path, "--format", "xml")
    _one_line_error(out, r"Invalid value for '--format'.*'xml'.*see 'profcompare show --help'")
    assert out.exit_code == 2


def test_debug_shows_the_traceback_and_keeps_the_exit_code(run_cli: Run, tmp_path: pathlib.Path) -> None:
    plain = run_cli("show", str(tmp_path / "nope"))
    debug = run_cli("--debug", "show", str(tmp_path / "nope"))
    assert plain.exit_code == debug.exit_code == ReportFormatError("").exit_code != 0
    assert "Traceback (most recent call last)" in debug.stderr and "ReportFormatError" in debug.stderr
    assert "Traceback" not in plain.stderr
    # the same one error line ends both
    assert debug.stderr.strip().splitlines()[-1] == plain.stderr.strip()


# ------------------------------------------------------------------ variables


def test_variables_filter_sort_and_liveness(run_cli: Run, offchip_path: str) -> None:
    out = run_cli("variables", offchip_path, "--filter", "moment", "--not-always-live", "--sort", "name",
                  "--format", "csv")
    assert out.exit_code == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    names = [r["name"] for r in rows]
    assert names == sorted(names) and len(names) == 8
    assert all("moment" in n and r["always_live"] == "False" for n, r in zip(names, rows))


def test_variables_top_and_always_live(run_cli: Run, onchip_path: str) -> None:
    out = run_cli("variables", onchip_path, "--top", "3", "--always-live", "--format", "json")
    data = json.loads(out.stdout)
    report = open_report(onchip_path)
    always = report.variables[report.variables["always_live"]]
    assert data["shown"] == 3 and data["total"] == len(always)
    assert [v["bytes"] for v in data["variables"]] == sorted(always["bytes"], reverse=True)[:3]
    text = run_cli("variables", onchip_path, "--top", "3").stdout
    assert f"Top 3 of {len(report.variables)} variables shown" in text


def test_variables_bad_regex(run_cli: Run, onchip_path: str) -> None:
    _one_line_error(run_cli("variables", onchip_path, "--filter", "layer(["), r"invalid filter regular expression")


def test_variables_unknown_sort_column(run_cli: Run, onchip_path: str) -> None:
    _one_line_error(run_cli("variables", onchip_path, "--sort", "size"), r"cannot sort variables by 'size'")


def test_variables_has_no_html(run_cli: Run, onchip_path: str) -> None:
    _one_line_error(run_cli("variables", onchip_path, "--format", "html"), r"Invalid value for '--format'")


def test_top_must_be_positive(run_cli: Run, onchip_path: str) -> None:
    _one_line_error(run_cli("show", onchip_path, "--top", "0"), r"--top")


# ------------------------------------------------------------------ compare


def test_compare_markdown_golden(run_cli: Run, report_dir: pathlib.Path, onchip_path: str, offchip_path: str) -> None:
    out = run_cli("compare", onchip_path, offchip_path, "--format", "markdown", "--top", "5")
    assert out.exit_code == 0, out.stderr
    _check_golden("compare_onchip_offchip.md", _scrub(out.stdout, report_dir))


def test_compare_text_golden(run_cli: Run, report_dir: pathlib.Path, onchip_path: str, offchip_path: str) -> None:
    out = run_cli("compare", onchip_path, offchip_path, "--top", "5")
    assert out.exit_code == 0, out.stderr
    _check_golden("compare_onchip_offchip.txt", _scrub(out.stdout, report_dir))


def test_compare_json_and_noise(run_cli: Run, onchip_path: str, offchip_path: str) -> None:
    data = json.loads(run_cli("compare", onchip_path, offchip_path, "--format", "json", "--top", "3").stdout)
    assert data["base"]["label"] == "onchip" and data["new"]["label"] == "offchip-sharded"
    assert len(data["variables"]) == 3
    assert data["summary"]["max_tile_bytes"]["status"] == "shrank"
    # huge noise thresholds (both of them: bytes and percent) make every byte change 'unchanged'
    quiet = json.loads(run_cli("compare", onchip_path, offchip_path, "--format", "json",
                               "--noise-bytes", str(10**12), "--noise-pct", "1000").stdout)
    assert quiet["summary"]["max_tile_bytes"]["status"] == "unchanged"


def test_compare_csv_is_the_variable_diff(run_cli: Run, onchip_path: str, offchip_path: str) -> None:
    out = run_cli("compare", onchip_path, offchip_path, "--format", "csv", "--top", "4")
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert len(rows) == 4
    assert rows[0]["name"] == "layer0/weight/second_moment" and rows[0]["status"] == "removed"


def test_fail_if_exceeded_exits_1_after_writing(run_cli: Run, onchip_path: str, offchip_path: str,
                                                 tmp_path: pathlib.Path) -> None:
    target = tmp_path / "diff.md"
    out = run_cli("compare", onchip_path, offchip_path, "--format", "markdown", "-o", str(target),
                  "--fail-if", "code_bytes>5%", "--fail-if", "peak_liveness_bytes>1%")
    assert out.exit_code == 1
    assert target.read_text().startswith("## profcompare comparison")
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1  # peak liveness shrank: only the code limit is exceeded
    assert lines[0].startswith("profcompare: limit exceeded: code_bytes>5%: code_bytes worse by 16.53% (grew")


def test_fail_if_within_limits_exits_0(run_cli: Run, onchip_path: str, offchip_path: str) -> None:
    out = run_cli("compare", onchip_path, offchip_path, "--format", "json", "--fail-if", "code_bytes>20%",
                  "--fail-if", "total_bytes>0%")
    assert out.exit_code == 0, out.stderr
    assert out.stderr == ""


def test_fail_if_bad_syntax(run_cli: Run, onchip_path: str, offchip_path: str) -> None:
    _one_line_error(run_cli("compare", onchip_path, offchip_path, "--fail-if", "code_bytes=5%"),
                    r"bad limit 'code_bytes=5%': expected METRIC>PCT% \(a growth\) or METRIC<PCT% \(a drop\)")


def test_fail_if_drop_limit(run_cli: Run, onchip_path: str, offchip_path: str) -> None:
    # peak liveness shrank from onchip to offchip-sharded: a drop limit of -1% is broken, "better"
    out = run_cli("compare", onchip_path, offchip_path, "--format", "json", "--fail-if", "peak_liveness_bytes<-1%")
    assert out.exit_code == 1
    assert "peak_liveness_bytes better by 9.3" in out.stderr


def test_fail_if_unknown_metric(run_cli: Run, onchip_path: str, offchip_path: str) -> None:
    _one_line_error(run_cli("compare", onchip_path, offchip_path, "--fail-if", "peak_bytes>5%"),
                    r"unknown metric 'peak_bytes'")


def test_compare_missing_new(run_cli: Run, onchip_path: str, tmp_path: pathlib.Path) -> None:
    _one_line_error(run_cli("compare", onchip_path, str(tmp_path / "gone")), r"gone: no such file or directory")


def test_compare_missing_argument(run_cli: Run, onchip_path: str) -> None:
    _one_line_error(run_cli("compare", onchip_path), r"Missing argument 'NEW'")


# ------------------------------------------------------------------ export


@pytest.mark.skipif("pva" in sys.modules, reason="the Poplar SDK is installed")
def test_export_without_sdk_is_one_line(run_cli: Run, tmp_path: pathlib.Path) -> None:
    profile = tmp_path / "profile.pop"
    profile.write_bytes(b"\0" * 64)
    out = run_cli("export", str(profile), "-o", str(tmp_path / "profile.sqlite"))
    _one_line_error(out, r"`pva` module is not available")
    assert not (tmp_path / "profile.sqlite").exists()


def test_export_writes_a_store_file(run_cli: Run, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    profile = tmp_path / "profile.pop"
    profile.write_bytes(b"\0" * 64)
    report = build_report("onchip", simulated=False)
    calls: list[tuple[object, object]] = []

    def fake_read_pva(path: object, debug: object = None, **_: object) -> object:
        calls.append((path, debug))
        return report

    monkeypatch.setattr(pva_reader, "read_pva", fake_read_pva)
    debug = tmp_path / "debug.cbor"
    debug.write_bytes(b"\xa0")
    target = tmp_path / "profile.sqlite"
    out = run_cli("export", str(profile), "-o", str(target), "--debug-cbor", str(debug))
    assert out.exit_code == 0, out.stderr
    assert calls == [(str(profile), str(debug))]
    exported = open_report(target)
    assert exported.meta.producer == "Poplar 3.3.0 (de1f8de2a7)"
    assert len(exported.variables) == len(report.variables)
    # the second export refuses to overwrite, before reading the profile again
    again = run_cli("export", str(profile), "-o", str(target))
    _one_line_error(again, r"already exists")
    assert len(calls) == 1
    assert run_cli("export", str(profile), "-o", str(target), "--force").exit_code == 0


def test_export_needs_output(run_cli: Run, tmp_path: pathlib.Path) -> None:
    _one_line_error(run_cli("export", str(tmp_path / "profile.pop")), r"Missing option '-o'")


def test_export_to_stdout_is_refused(run_cli: Run, tmp_path: pathlib.Path) -> None:
    _one_line_error(run_cli("export", str(tmp_path / "profile.pop"), "-o", "-"), r"not a stream")


def test_exported_file_is_sqlite(run_cli: Run, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pva_reader, "read_pva", lambda *a, **k: build_report("onchip", simulated=False))
    (tmp_path / "p.pop").write_bytes(b"x")
    assert run_cli("export", str(tmp_path / "p.pop"), "-o", str(tmp_path / "out.sqlite")).exit_code == 0
    with sqlite3.connect(tmp_path / "out.sqlite") as con:
        assert con.execute("select count(*) from variables").fetchone()[0] > 0


def test_comparing_a_report_with_itself_warns(run_cli: Run, onchip_path: str) -> None:
    out = run_cli("compare", onchip_path, onchip_path, "--format", "json")
    assert out.exit_code == 0
    assert out.stderr == f"profcompare: warning: base and new are the same report ({onchip_path}): every delta is 0\n"


def test_short_reprs_for_a_plain_repl(onchip_path: str, offchip_path: str) -> None:
    import profcompare as pc

    diff = pc.compare(pc.open_report(onchip_path), pc.open_report(offchip_path))
    text = repr(diff)
    assert len(text.splitlines()) < 25
    assert text.startswith("<Comparison base='onchip' (simulated) new='offchip-sharded' (simulated)")
    assert "code_bytes" in text and "+16.5%" in text
    # summaries print every figure in full: no scientific notation, thousands separators
    summary = repr(diff.summary)
    assert "e+0" not in summary and "23,204,748" in summary
    assert diff.summary["base"].dtype == "float64"  # the display changed, not the dtype
    assert "e+0" not in repr(diff.base.summary()) and len(repr(diff.base).splitlines()) < 25


def test_variables_help_lists_only_its_formats() -> None:
    from click.testing import CliRunner

    from profcompare.cli import cli

    text = CliRunner().invoke(cli, ["variables", "--help"]).output
    assert "[text|markdown|json|csv]" in text and "html" not in text


@pytest.mark.parametrize(
    ("args", "hint"),
    [(["run", "onchp"], "(did you mean 'onchip' or 'offchip'?)"),
     (["run", "onchip", "--set", "replica=2"], "(did you mean 'replicas'?)"),
     (["sweep", "offchip-shrded", "--param", "hidden=8,16"], "(did you mean 'offchip-sharded'")],
)
def test_unknown_names_suggest_the_closest(run_cli: Run, args: list[str], hint: str, tmp_path: pathlib.Path) -> None:
    out = run_cli(*args, "--out", str(tmp_path))
    assert out.exit_code == 2 and hint in out.stderr and len(out.stderr.splitlines()) == 1


def test_ledger_as_csv(run_cli: Run, onchip_path: str, offchip_path: str) -> None:
    import csv
    import io

    from profcompare.comparison import compare

    out = run_cli("compare", onchip_path, offchip_path, "--format", "csv", "--table", "ledger")
    assert out.exit_code == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    ledger = compare(open_report(onchip_path), open_report(offchip_path)).ledger
    assert len(rows) == len(ledger)
    assert sum(int(r["delta_bytes"]) for r in rows if r["location"] == "streaming_memory") == \
        ledger.loc[ledger["location"] == "streaming_memory", "delta_bytes"].sum()
    out = run_cli("show", offchip_path, "--format", "csv", "--table", "ledger")
    report = open_report(offchip_path).ledger()
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [(r["parameter"], r["role"], r["location"], int(r["bytes"])) for r in rows] == list(
        report[["parameter", "role", "location", "bytes"]].itertuples(index=False, name=None))
    refused = run_cli("show", offchip_path, "--table", "ledger")
    assert refused.exit_code == 2
    assert refused.stderr.strip().splitlines() == [
        "profcompare: error: --table ledger applies to --format csv; --format json holds every table"]
    # any table of the page, by its id, as the page draws it
    code = run_cli("compare", onchip_path, offchip_path, "--format", "csv", "--table", "code-table", "--top", "3")
    assert code.exit_code == 0, code.stderr
    lines = list(csv.reader(io.StringIO(code.stdout)))
    assert lines[0] == ["Program", "Type", "Base", "New", "Delta", "Delta %", "Status"]
    assert len(lines) == 1 + 3 + 1 and lines[-1][0].startswith("other (")
    wrong = run_cli("show", offchip_path, "--format", "csv", "--table", "nope")
    assert wrong.exit_code == 2 and len(wrong.stderr.strip().splitlines()) == 1
    assert wrong.stderr.startswith("profcompare: error: no table 'nope' on this page; its tables: summary-table, ")
