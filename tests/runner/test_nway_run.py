"""N-way runs: ``index.html`` / ``index.json`` with every variant side by side, links to each
comparison with the base, and one side-by-side table in the terminal instead of a report per pair."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from click.testing import CliRunner, Result

from profcompare.cli import cli
from profcompare.model import METRICS
from profcompare.readers import open_report
from profcompare.render.format import format_metric, format_pct


def _run(args: list[str]) -> Result:
    return CliRunner().invoke(cli, ["run", *args, "--backend", "sim", "-q"])


class _Table(HTMLParser):
    """The cells of the page's #nway-table (text per cell, rows in order) and its links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.links: list[str] = []
        self.tags: list[str] = []
        self._in_table = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "table" and ("id", "nway-table") in attrs:
            self._in_table = True
        elif self._in_table and tag == "tr":
            self.rows.append([])
        elif self._in_table and tag in ("td", "th"):
            self._cell = []
        elif self._in_table and tag == "a":
            self.links.append(dict(attrs)["href"] or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_table = False
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_four_variant_run_writes_an_index_and_prints_one_table(fake_registry: object, tmp_path: Path) -> None:
    variants = ["fake-small", "fake-big", "fake-broken", "fake-oom-allowed"]
    result = _run([*variants, "--out", str(tmp_path), "--name", "r", "--set", "size=2048"])
    assert result.exit_code == 1  # fake-broken failed
    run_dir = tmp_path / "r"
    reports = {v: open_report(run_dir / v) for v in ("fake-small", "fake-big", "fake-oom-allowed")}

    # index.json: every variant, base first, every summary metric with its confidence
    document = json.loads((run_dir / "index.json").read_text())
    assert document["schema_version"] == 3 and document["base"] == "fake-small"
    assert document["details"] == {}  # a variant failed: no detail row is there for every variant
    assert [v["label"] for v in document["variants"]] == variants
    assert [v["status"] for v in document["variants"]] == ["ok", "ok", "failed", "oom"]
    assert [v["base"] for v in document["variants"]] == [True, False, False, False]
    assert document["comparisons"] == {
        "fake-big": "compare-fake-small-vs-fake-big.html",
        "fake-oom-allowed": "compare-fake-small-vs-fake-oom-allowed.html",
    }
    for variant in document["variants"]:
        assert list(variant["metrics"]) == list(METRICS)
        report = reports.get(variant["label"])
        for metric, cell in variant["metrics"].items():
            if report is None:
                assert cell == {"value": None, "confidence": None, "delta_pct": None}
                continue
            value = float(report.summary()[metric])
            assert cell["value"] == (None if value != value else value)
            assert cell["confidence"] == report.confidence()[metric]
    big = document["variants"][1]["metrics"]["streaming_memory_bytes"]
    assert (document["variants"][0]["metrics"]["streaming_memory_bytes"]["value"], big["value"]) == (0.0, 4096.0)
    assert big["delta_pct"] is None  # a zero base has no percentage
    variable = document["variants"][1]["metrics"]["variable_bytes"]
    base_variable = reports["fake-small"].summary()["variable_bytes"]
    assert variable["delta_pct"] == 100.0 * (reports["fake-big"].summary()["variable_bytes"] - base_variable) / base_variable

    # the memory ledger side by side: each report's bytes per (parameter, role, location), 0 where a
    # variant has no such row, null without a report
    expected: dict[tuple[str, str, str], dict[str, int | None]] = {}
    for label in variants:
        report = reports.get(label)
        if report is None:
            continue
        for row in report.ledger().itertuples(index=False):
            key = (str(row.parameter), str(row.role), str(row.location))
            expected.setdefault(key, {})[label] = expected.get(key, {}).get(label, 0) + int(row.bytes)
    assert expected  # the fakes' reports have ledger rows
    got = {(r["parameter"], r["role"], r["location"]): r["bytes"] for r in document["ledger"]}
    assert set(got) == set(expected)
    for key, row in got.items():
        assert row == {v: (None if v == "fake-broken" else expected[key].get(v, 0)) for v in variants}

    # index.html: one column per variant (base marked), status, links, every metric
    page = (run_dir / "index.html").read_text()
    parsed = _Table()
    parsed.feed(page)
    header, status, links, differs, *metric_rows = parsed.rows
    assert header == ["Metric", "fake-small BASE", "fake-big", "fake-broken", "fake-oom-allowed"]
    assert status == ["Status", "ok", "ok", "failed", "oom"]
    assert links == ["Comparison with the base", "(base)", "comparison", "–", "comparison"]
    assert parsed.links == ["compare-fake-small-vs-fake-big.html", "compare-fake-small-vs-fake-oom-allowed.html"]
    assert all((run_dir / link).is_file() for link in parsed.links)
    # what differs in each variant's configuration from the base's: the fakes differ in their
    # target's bytes per tile only where a variant sets it
    assert differs[:3] == ["What differs from the base", "(the base)", "same configuration"]
    assert len(metric_rows) == len(METRICS)
    row = next(r for r in metric_rows if r[0] == "Model state in tile memory")
    pct = document["variants"][1]["metrics"]["variable_bytes"]["delta_pct"]
    assert row[1] == format_metric("variable_bytes", base_variable)  # exact: no ~ marker
    assert row[2] == format_metric("variable_bytes", reports["fake-big"].summary()["variable_bytes"]) + " " + format_pct(pct)
    assert row[3] == "n/a"  # no report
    cycles = next(r for r in metric_rows if r[0] == "Device cycles per step")
    assert cycles[1].startswith("~")  # modelled
    assert 'class="base' in page and "docs/ipu-model.md" in page
    assert page.count("<tr>", page.index('id="ledger-table"')) == 1 + len(got)  # header + a row each

    # the terminal: the side-by-side table once, no per-pair report
    out = result.output
    assert out.count("variants side by side") == 1
    assert "Variables" not in out and "Memory by category" not in out
    assert re.search(r"Model state in tile memory\s+\S+ \S+\s+\S+ \S+ \(\+\d", out)
    assert "index.html" in out and "index.json" in out


def test_two_variant_run_keeps_the_pairwise_terminal_diff_and_writes_an_index(fake_registry: object, tmp_path: Path) -> None:
    result = _run(["fake-small", "fake-big", "--out", str(tmp_path), "--name", "r"])
    assert result.exit_code == 0, result.output
    assert "Variables" in result.output and "variants side by side" not in result.output
    document = json.loads((tmp_path / "r" / "index.json").read_text())
    assert [v["label"] for v in document["variants"]] == ["fake-small", "fake-big"]
    assert ">comparison</a>" in (tmp_path / "r" / "index.html").read_text()


def test_index_page_escapes_names(tmp_path: Path) -> None:
    from profcompare.analysis.nway import nway_from_values
    from profcompare.render.nway import render_nway_html

    import pandas as pd

    hostile = "</script><b>x</b>"
    values = pd.DataFrame({"base": [1.0, 2.0], hostile: [2.0, 1.0]}, index=["code_bytes", "samples_per_second"])
    table = nway_from_values(values)
    page = render_nway_html(table, title=f"run {hostile}", links={hostile: f"compare-base-vs-{hostile}.html"})
    parsed = _Table()
    parsed.feed(page)
    assert "b" not in parsed.tags and page.count("</script>") == 1
    assert parsed.rows[0] == ["Metric", "base BASE", hostile]
    assert parsed.links == [f"compare-base-vs-{hostile}.html"]
    # code grew (worse), samples per second fell (worse): both coloured bad
    assert len(re.findall(r'<td class="[^"]*tone-bad', page)) == 2 and "tone-good" not in page.split("<body>")[1]


def test_sweep_page_is_the_nway_view_with_a_column_per_point() -> None:
    import math

    import pandas as pd

    from profcompare.render.sweep import render_sweep_html

    table = pd.DataFrame(
        {
            "point": ["hidden=64", "hidden=128", "hidden=8192"],
            "hidden": [64, 128, 8192],
            "status": ["ok", "ok", "failed"],
            "always_live_bytes": [2.0 * 2**20, 3.0 * 2**20, math.nan],
            "not_always_live_peak_bytes": [2**19, 2**20, math.nan],
            "code_bytes": [2**20, 2**20, math.nan],
            "streaming_memory_bytes": [0.0, 0.0, math.nan],
            "cycles_per_step": [1000.0, 1500.0, math.nan],
            "samples_per_second": [1.2e6, 0.8e6, math.nan],
            "error": [None, None, "boom"],
        }
    )
    meta = {"name": "s", "workload": "mnist", "variant": "onchip", "backend": "sim", "swept": ["hidden"], "fixed_config": {}}
    page = render_sweep_html(table, ["hidden"], meta)
    parsed = _Table()
    parsed.feed(page)
    header, status, links, knob, *rows = parsed.rows
    assert header == ["Metric", "hidden=64 BASE", "hidden=128", "hidden=8192"]
    assert status == ["Status", "ok", "ok", "failed"]
    assert knob == ["hidden", "64", "128", "8192"]
    assert links == ["Comparison with the base", "(base)", "–", "–"]
    always = next(r for r in rows if r[0] == "Always-live memory")
    assert always == ["Always-live memory", "2.0 MiB", "3.0 MiB +50.0%", "n/a"]
    rate = next(r for r in rows if r[0] == "Samples per second")
    assert rate[2].endswith("-33.3%")
    assert rows[-1] == ["Error", "", "", "boom"]
    assert "<svg" in page and 'id="sweep-data"' in page
