"""One quantity, one value: every output of the main job (the terminal of ``run``, ``compare`` and
``show`` as text, the Markdown, HTML, JSON and CSV outputs, the index page and index.json, the
notebook displays) and of a real Graph Analyser cache gives each named figure a single value -- the summary
metrics, the device cycles of each phase, the collectives' cycles, the device time -- and a
report's phase shares add up to 100%.

The figures are read from the outputs themselves: every table row whose first cell is a tracked
name gives its figures (one per report shown), JSON documents are written into the same rows
with the formatting the pages use, and the two notes that restate figures (the phase bar's total
and the collectives' note) are read too. A name seen with two values fails the test, naming the
outputs that disagree.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from html import unescape
from pathlib import Path

import pytest
from click.testing import CliRunner

from profcompare.cli import cli
from profcompare.comparison import compare
from profcompare.model import DEVICE_PHASES, METRICS
from profcompare.readers import open_report
from profcompare.render.format import METRIC_LABELS, format_cycles, format_metric, format_seconds
from profcompare.render.labels import phase_label

GA_CACHE = "ga_cache_popxl_mnist_pipelining_2ipu.sqlite"

#: the names whose rows are read: the summary metrics, the device phases, the time table's device time
SUMMARY_LABELS = {METRIC_LABELS[m]: m for m in METRICS}
PHASE_LABELS = {phase_label(p): p for p in DEVICE_PHASES}
DEVICE_TIME = "Device time per step"
#: the replicas table's figure (its rows are named by grouping, so read apart)
COLLECTIVES_CYCLES = "Collectives' cycles"
TRACKED = {*SUMMARY_LABELS, *PHASE_LABELS, DEVICE_TIME, "Min tile memory", "Median tile memory"}
#: the columns of a table of one row per report (the liveness table) that are summary figures
_COLUMN_NAMES = {"Always-live": METRIC_LABELS["always_live_bytes"]}

#: a figure as the outputs write it: 1,901,454 / 56.8 MiB / -1.9% / 1.776 ms / n/a
_FIGURE = re.compile(r"n/a|[+-]?\d[\d,]*(?:\.\d+)?(?: (?:B|KiB|MiB|GiB|TiB|ms|s|us|µs))?%?")


@dataclass(frozen=True)
class Output:
    """One output: its name, its kind (text, markdown, html, json, index-json) and the reports
    its figure columns show, in column order."""

    name: str
    kind: str
    body: str
    sides: tuple[str, ...]


def _figure(cell: str) -> str | None:
    match = _FIGURE.match(cell.strip().lstrip("~").strip())
    return match.group(0) if match else None


def _clean(cell: str) -> str:
    text = unescape(re.sub(r"<[^>]+>", " ", cell))
    return " ".join(text.replace("\\", "").split())


def _rows(output: Output) -> Iterator[list[str]]:
    """The table rows of ``output`` as lists of cell texts."""
    if output.kind == "text":
        for line in output.body.splitlines():
            yield re.split(r"\s{2,}", line.strip())
    elif output.kind == "markdown":
        for line in output.body.splitlines():
            if line.startswith("| "):
                yield [_clean(c).strip("*_ ") for c in line.strip().strip("|").split(" | ")]
    elif output.kind == "html":
        page = re.sub(r"<script.*?</script>", "", output.body, flags=re.DOTALL)
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.DOTALL):
            yield [_clean(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.DOTALL)]
    elif output.kind == "csv":
        for row in list(csv.DictReader(io.StringIO(output.body))):
            value = float(row["value"]) if row["value"] else float("nan")
            yield [METRIC_LABELS[row["metric"]], format_metric(row["metric"], value)]
    else:
        yield from _json_rows(output)


def _grouping_name(group_size: int, num_groups: int, stride: int, replicas: int) -> str:
    return f"all {replicas} replicas" if num_groups == 1 and group_size == replicas else \
        f"stride {stride}, size {group_size}"


def _json_rows(output: Output) -> Iterator[list[str]]:
    """A JSON document's figures as the rows a page shows, formatted as the pages format them."""
    data = json.loads(output.body)
    if output.kind == "index-json":
        values = {v["label"]: v["metrics"] for v in data["variants"]}
        for metric in METRICS:
            yield [METRIC_LABELS[metric], *(format_metric(metric, values[s][metric]["value"]) for s in output.sides)]
        return
    compared = "base" in data and "new" in data
    sides = ("base", "new") if compared else ("value",)
    for metric, entry in data["summary"].items():
        yield [METRIC_LABELS[metric], *(format_metric(metric, entry[s]) for s in sides)]
    for row in data["phases"]:
        if row["phase"] in DEVICE_PHASES:
            cycles = [row[f"{s}_cycles"] for s in sides] if compared else [row["cycles"]]
            yield [phase_label(row["phase"]), *(format_cycles(c) for c in cycles)]
    device = data["time"]["device_seconds_per_step"]
    yield [DEVICE_TIME, *(format_seconds(device[s]) for s in sides)] if compared else \
        [DEVICE_TIME, format_seconds(device)]
    if compared:
        replicas = data["base"]["target"]["num_replicas"]
        for row in data["replicas"]:
            yield [_grouping_name(row["group_size"], row["num_groups"], row["stride"], replicas),
                   str(row["base_collectives"]), str(row["new_collectives"]), format_cycles(row["base_cycles"]),
                   format_cycles(row["new_cycles"])]
    else:
        replicas = data["replicas"]
        for g in replicas["groupings"]:
            yield [_grouping_name(g["group_size"], g["num_groups"], g["stride"], replicas["replicas"]),
                   str(g["num_groups"]), "", str(g["collectives"]), format_cycles(g["cycles"])]


def figures(outputs: Iterable[Output]) -> dict[tuple[str, str], dict[str, set[str]]]:
    """Every tracked figure of ``outputs``: (name, report) -> output -> the values written there."""
    found: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for output in outputs:
        n = len(output.sides)
        per_report: list[str | None] = []  # a table of one row per report: its columns' names
        row_of_report = 0
        for cells in _rows(output):
            if not cells:
                continue
            label = cells[0]
            if label == "Report":
                per_report, row_of_report = [_COLUMN_NAMES.get(c, c if c in SUMMARY_LABELS else None)
                                             for c in cells], 0
                continue
            if per_report and row_of_report < n and len(cells) == len(per_report):
                for name, cell in zip(per_report, cells):
                    value = _figure(cell) if name else None
                    if name and value is not None:
                        found[(name, output.sides[row_of_report])][output.name].add(value)
                row_of_report += 1
                continue
            per_report = []
            if label in TRACKED:
                values = cells[1:1 + n]
            elif re.fullmatch(r"all \d+ replicas|stride \d+, size \d+", label) and len(cells) >= 5:
                # comparison: grouping, collectives base/new, cycles base/new; show: grouping,
                # groups, members, collectives, cycles
                label, values = COLLECTIVES_CYCLES, cells[3:5] if n == 2 else cells[4:5]
            else:
                continue
            for side, cell in zip(output.sides, values, strict=False):
                value = _figure(cell)
                if value is not None:
                    found[(label, side)][output.name].add(value)
        if output.kind in ("text", "markdown", "html"):
            _note_figures(output, found)
    return found


def _note_figures(output: Output, found: dict[tuple[str, str], dict[str, set[str]]]) -> None:
    """The figures notes restate: the collectives' note (whole = phase + the rest) and the phase
    bar's total on a page."""
    text = " ".join(_clean(output.body).split()) if output.kind == "html" else " ".join(output.body.split())
    restated = re.findall(r"([\d,]+) = ([\d,]+) collective phase \+ ([\d,]+) of other phases", text)
    if restated:
        assert len(restated) == len(output.sides), (output.name, restated)
        for side, (whole, phase, rest) in zip(output.sides, restated, strict=True):
            assert int(whole.replace(",", "")) - int(phase.replace(",", "")) == int(rest.replace(",", ""))
            found[(COLLECTIVES_CYCLES, side)][f"{output.name} (note)"].add(whole)
            found[("collective", side)][f"{output.name} (note)"].add(phase)
    if output.kind == "html":
        bars = re.findall(r'"text", \["([\d,]+) device cycles[^"]*"(?:, "([\d,]+) device cycles[^"]*")?\]', output.body)
        for bar in bars:
            totals = [t for t in bar if t]
            assert len(totals) == len(output.sides), (output.name, bar)
            for side, total in zip(output.sides, totals, strict=True):
                found[(METRIC_LABELS["cycles_per_step"], side)][f"{output.name} (phase bar)"].add(total)


def disagreements(found: dict[tuple[str, str], dict[str, set[str]]]) -> list[str]:
    """Every (name, report) given more than one value, with the outputs that say each."""
    problems = []
    for (name, side), by_output in sorted(found.items()):
        values = set().union(*by_output.values())
        if len(values) > 1:
            said = "; ".join(f"{output}: {', '.join(sorted(v))}" for output, v in sorted(by_output.items()))
            problems.append(f"{name} of {side}: {said}")
    return problems


def phase_shares(output: Output) -> list[float]:
    """The phase shares of a one-report output (its execution table's third column), in percent."""
    shares = []
    for cells in _rows(output):
        if cells and cells[0] in PHASE_LABELS and len(cells) >= 3 and cells[2].endswith("%"):
            shares.append(float(cells[2].rstrip("%").lstrip("+<")))
    return shares


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def _show_outputs(path: str, side: str) -> list[Output]:
    report = open_report(path)
    return [
        Output(f"show {side} text", "text", _invoke("show", path), (side,)),
        Output(f"show {side} markdown", "markdown", _invoke("show", path, "--format", "markdown"), (side,)),
        Output(f"show {side} html", "html", _invoke("show", path, "--format", "html"), (side,)),
        Output(f"show {side} json", "json", _invoke("show", path, "--format", "json"), (side,)),
        Output(f"show {side} csv", "csv", _invoke("show", path, "--format", "csv"), (side,)),
        Output(f"notebook {side}", "html", report._repr_html_(), (side,)),
    ]


@pytest.fixture(scope="module")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> list[Output]:
    """Every output of ``profcompare run onchip offchip-sharded`` on the simulator (its terminal
    the first screen, as on a terminal), and of ``compare`` (whole, and its first screen) and
    ``show`` over its reports."""
    out = tmp_path_factory.mktemp("one-value")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
        patch.delenv("PROFCOMPARE_BACKEND", raising=False)
        # what a terminal shows (--brief: the first screen, opened and closed by the headline)
        terminal = _invoke("run", "onchip", "offchip-sharded", "--out", str(out), "--name", "t", "--backend", "sim",
                           "-q", "--brief")
    run_dir = out / "t"
    base, new = str(run_dir / "onchip"), str(run_dir / "offchip-sharded")
    stem = run_dir / "compare-onchip-vs-offchip-sharded"
    sides = ("onchip", "offchip-sharded")
    return [
        Output("run terminal", "text", terminal, sides),
        Output("compare text", "text", _invoke("compare", base, new), sides),
        Output("compare terminal", "text", _invoke("compare", base, new, "--brief"), sides),
        Output("compare markdown", "markdown", stem.with_suffix(".md").read_text(), sides),
        Output("compare html", "html", stem.with_suffix(".html").read_text(), sides),
        Output("compare json", "json", stem.with_suffix(".json").read_text(), sides),
        Output("index html", "html", (run_dir / "index.html").read_text(), sides),
        Output("index json", "index-json", (run_dir / "index.json").read_text(), sides),
        Output("notebook comparison", "html", compare(open_report(base), open_report(new))._repr_html_(), sides),
        *_show_outputs(base, "onchip"),
        *_show_outputs(new, "offchip-sharded"),
    ]


def _shared_data_file(name: str) -> Path:
    env = os.environ.get("PROFCOMPARE_SHARED_DATA")
    candidates = [Path(env) / name] if env else []
    candidates += [parent / "shared" / "data" / name for parent in Path(__file__).resolve().parents]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    pytest.skip(f"{name} not found (expected in ../shared/data/ beside the project)")


@pytest.fixture(scope="module")
def ga_cache() -> list[Output]:
    """Every output of ``show`` over Graph Analyser's cache of a real pipelined MNIST profile."""
    return _show_outputs(str(_shared_data_file(GA_CACHE)), "ga-cache")


def test_every_output_of_the_main_job_gives_each_figure_one_value(main_job: list[Output]) -> None:
    found = figures(main_job)
    assert disagreements(found) == []
    # the figures were read where they are shown (the test is not vacuous)
    for side in ("onchip", "offchip-sharded"):
        for label in SUMMARY_LABELS:
            outputs = found[(label, side)]
            assert {"compare markdown", "compare html", "compare json", "index json", "index html",
                    "notebook comparison", f"show {side} text", f"show {side} csv", f"notebook {side}"} <= set(outputs), \
                (label, side)
        for phase in ("compute", "exchange", "sync", "host I/O", "collective"):
            assert {"compare text", "compare markdown", "compare html", "compare json", f"show {side} text",
                    f"show {side} html", f"show {side} json"} <= set(found[(phase, side)]), (phase, side)
        assert {"compare markdown", "compare html", "compare json", "compare markdown (note)",
                f"show {side} text", f"show {side} json"} <= set(found[(COLLECTIVES_CYCLES, side)])
        for label in ("Always-live memory", "Not-always-live peak", "Peak liveness"):
            assert {"compare html", f"show {side} html"} <= set(found[(label, side)]), label
        assert {"compare html (phase bar)", f"show {side} html (phase bar)"} <= set(
            found[(METRIC_LABELS["cycles_per_step"], side)])
    # the figures the issue found given two values, now one each
    value = {key: next(iter(set().union(*by.values()))) for key, by in found.items()}
    assert (value[("collective", "onchip")], value[("collective", "offchip-sharded")]) == ("130,268", "131,293")
    assert (value[(COLLECTIVES_CYCLES, "onchip")], value[(COLLECTIVES_CYCLES, "offchip-sharded")]) == (
        "130,926", "134,778")
    assert value[(METRIC_LABELS["cycles_per_step"], "offchip-sharded")] == "4,659,817"


def test_the_graph_analyser_cache_gives_each_figure_one_value(ga_cache: list[Output]) -> None:
    found = figures(ga_cache)
    assert disagreements(found) == []
    value = {name: next(iter(set().union(*found[(name, "ga-cache")].values()))) for name, _ in found}
    # the span of the trace; each cycle under one phase (compute, then exchange, host I/O,
    # collective; sync the waiting no other phase covers, with the 948 cycles no block covers)
    assert value[METRIC_LABELS["cycles_per_step"]] == "2,540,750"
    assert {p: value[p] for p in ("compute", "exchange", "sync", "host I/O", "collective")} == {
        "compute": "584,030", "exchange": "6,782", "sync": "19,034", "host I/O": "1,918,376", "collective": "12,528"}
    assert {"show ga-cache html (phase bar)", "show ga-cache json", "show ga-cache text"} <= set(
        found[(METRIC_LABELS["cycles_per_step"], "ga-cache")])


@pytest.mark.parametrize("fixture", ["main_job", "ga_cache"])
def test_phase_shares_add_up_to_100_percent(fixture: str, request: pytest.FixtureRequest) -> None:
    outputs: Sequence[Output] = request.getfixturevalue(fixture)
    checked = 0
    for output in outputs:
        if output.kind == "json" and len(output.sides) == 1:
            pct = [row["pct"] for row in json.loads(output.body)["phases"] if row["phase"] in DEVICE_PHASES]
            assert sum(pct) == pytest.approx(100.0), output.name
            checked += 1
        elif output.kind in ("text", "markdown", "html") and len(output.sides) == 1:
            shares = phase_shares(output)
            if shares:
                # each share is rounded to 0.1%: the sum is 100% within half a step per phase
                assert abs(sum(shares) - 100.0) <= 0.05 * len(shares) + 1e-9, (output.name, shares)
                checked += 1
    assert checked >= 3


def test_a_figure_given_two_values_fails() -> None:
    one = Output("a", "markdown", "| Device cycles per step | 1,726,673 |\n| collective | 130,375 |\n", ("r",))
    two = Output("b", "text", "Device cycles per step   1,726,673\ncollective   131,127\n", ("r",))
    problems = disagreements(figures([one, two]))
    assert problems == ["collective of r: a: 130,375; b: 131,127"]
    assert disagreements(figures([one, Output("c", "markdown", one.body, ("r",))])) == []


def headlines(output: Output) -> list[str]:
    """The headline sentences ``output`` shows: the terminal's first and last lines, the line under
    a Markdown title, a page's ``#headline`` paragraph, a JSON document's ``headline``."""
    if output.kind == "text":
        lines = [line.strip() for line in output.body.splitlines() if line.strip()]
        return [lines[0], lines[-1]]
    if output.kind == "markdown":
        lines = output.body.splitlines()
        assert lines[0].startswith("## ") and lines[1] == "", output.name
        first = lines[2] if len(lines) > 2 else ""
        bold = first.startswith("**") and first.endswith("**") and len(first) > 4
        return [unescape(first[2:-2].replace("\\", ""))] if bold else []
    if output.kind == "html":
        found = re.findall(r'<p id="headline" class="headline">(.*?)</p>|'
                           r'<div class="profcompare-headline"[^>]*>(.*?)</div>', output.body, re.DOTALL)
        return [unescape(page or notebook) for page, notebook in found]
    return [json.loads(output.body)["headline"]]


def test_every_output_of_the_main_job_holds_the_terminals_headline(main_job: list[Output]) -> None:
    outputs = {output.name: output for output in main_job}
    terminal = headlines(outputs["run terminal"])
    # the terminal opens and closes with the headline; the comparison's every output shows it once
    assert terminal[0] == terminal[1] == \
        "offchip-sharded vs onchip: 1.9% less peak liveness, 2.2x slower; both fit"
    for name in ("compare terminal", "compare markdown", "compare html", "compare json", "notebook comparison"):
        assert set(headlines(outputs[name])) == {terminal[0]} and headlines(outputs[name]), name
    # the index (the N-way view) has its own headline, the same on its page and in its JSON
    index = headlines(outputs["index json"])
    assert headlines(outputs["index html"]) == index == \
        ["2 variants against onchip: all 2 fit; least peak liveness offchip-sharded (-1.9%); fastest onchip (the base)"]
    # the HTML shows it first under the title, above the verdict
    page = outputs["compare html"].body
    assert page.index("</h1>") < page.index('id="headline"') < page.index('id="verdict"')
    # a report's outputs have no headline
    for name in ("show onchip markdown", "show onchip html", "notebook onchip"):
        assert headlines(outputs[name]) == [], name
    assert "headline" not in json.loads(outputs["show onchip json"].body)
