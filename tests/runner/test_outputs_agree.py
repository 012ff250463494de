"""The main job on the simulator, end to end: every output names time the same way and agrees on
each figure, the verdict states what the summary table says, Streaming Memory is never coloured
as a cost, the liveness rule is stated wherever the ledger or liveness is shown, and ``run``
prints the sections the README lists, in that order."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from profcompare.cli import cli
from profcompare.commands.run import SUMMARY_SECTIONS
from profcompare.render.section_names import SECTION_NAMES
from profcompare.comparison import Comparison, compare
from profcompare.readers import open_report
from profcompare.render.format import METRIC_LABELS, format_metric
from profcompare.render.ledger_words import LIVENESS_RULE_SOURCE

ROOT = Path(__file__).resolve().parents[2]

#: the three figures of time and the throughput they give
TIME_METRICS = ("cycles_per_step", "host_seconds_per_step", "seconds_per_step", "samples_per_second")


@pytest.fixture(scope="module")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``profcompare run onchip offchip-sharded`` and a one-point sweep of offchip-sharded at its
    default sharded_threshold (the same program), with the default knobs, on the simulator."""
    out = tmp_path_factory.mktemp("main-job")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
        patch.delenv("PROFCOMPARE_BACKEND", raising=False)
        run = CliRunner().invoke(cli, ["run", "onchip", "offchip-sharded", "--out", str(out), "--name", "t1",
                                       "--backend", "sim", "-q"])
        assert run.exit_code == 0, run.output + repr(run.exception)
        sweep = CliRunner().invoke(cli, ["sweep", "offchip-sharded", "--param", "sharded_threshold=512", "--out",
                                         str(out), "--name", "s1", "--backend", "sim", "-q"])
        assert sweep.exit_code == 0, sweep.output + repr(sweep.exception)
    run_dir = out / "t1"
    base, new = open_report(run_dir / "onchip"), open_report(run_dir / "offchip-sharded")
    stem = run_dir / "compare-onchip-vs-offchip-sharded"
    return {
        "terminal": run.output,
        "dir": run_dir,
        "sweep_dir": out / "s1",
        "comparison": compare(base, new),
        "markdown": stem.with_suffix(".md").read_text(),
        "json": json.loads(stem.with_suffix(".json").read_text()),
        "html": stem.with_suffix(".html").read_text(),
        "index_json": json.loads((run_dir / "index.json").read_text()),
        "index_html": (run_dir / "index.html").read_text(),
        "sweep_json": json.loads((out / "s1" / "sweep.json").read_text()),
        "sweep_html": (out / "s1" / "sweep.html").read_text(),
    }


def _row(html: str, metric: str) -> str:
    match = re.search(rf'<tr data-metric="{metric}"[^>]*>(.*?)</tr>', html, re.DOTALL)
    assert match, metric
    return unescape(re.sub(r"<[^>]+>", " ", match.group(1)))


def test_the_summary_keeps_session_run_time_device_plus_host(main_job: dict[str, Any]) -> None:
    cmp: Comparison = main_job["comparison"]
    for report in (cmp.base, cmp.new):
        summary = report.summary()
        assert summary["seconds_per_step"] == summary["cycles_per_step"] / report.meta.target.clock_hz + \
            summary["host_seconds_per_step"]
        # the fitted host/runtime time of one session.run (docs/ipu-model.md section 8), 0.6956 ms =
        # 925,148 cycles, less the 464,832 the device waits for the host in the run's opening copy
        # (section 12): 460,316 cycles = 0.3461 ms
        assert summary["host_seconds_per_step"] == pytest.approx(460_316 / 1.33e9, rel=1e-9)
        assert report.confidence()["host_seconds_per_step"] == "modelled"


def test_every_output_agrees_on_each_figure_of_time(main_job: dict[str, Any]) -> None:
    cmp: Comparison = main_job["comparison"]
    summary = cmp.summary
    sweep_point = main_job["sweep_json"]["points"][0]
    for metric in TIME_METRICS:
        base, new = float(summary.loc[metric, "base"]), float(summary.loc[metric, "new"])
        label = METRIC_LABELS[metric]
        b, n = format_metric(metric, base), format_metric(metric, new)
        # json of the comparison, the page's data block, index.json and the sweep: the same numbers
        assert main_job["json"]["summary"][metric]["base"] == pytest.approx(base, rel=1e-12)
        assert main_job["json"]["summary"][metric]["new"] == pytest.approx(new, rel=1e-12)
        page_data = json.loads(re.search(r'<script type="application/json" id="profcompare-data">(.*?)</script>',
                                         main_job["html"], re.DOTALL).group(1))
        assert page_data["summary"][metric]["new"] == pytest.approx(new, rel=1e-12)
        variants = {v["label"]: v["metrics"] for v in main_job["index_json"]["variants"]}
        assert variants["onchip"][metric]["value"] == pytest.approx(base, rel=1e-12)
        assert variants["offchip-sharded"][metric]["value"] == pytest.approx(new, rel=1e-12)
        assert sweep_point[metric] == pytest.approx(new, rel=1e-12)
        # the text outputs: one name, the same formatted figures
        assert re.search(rf"^{re.escape(label)} +{re.escape(b)} +{re.escape(n)} ", main_job["terminal"], re.MULTILINE)
        assert f"| {label} | {b} | {n} |" in main_job["markdown"].replace("\\", "")
        html_row = _row(main_job["html"], metric)
        assert label in html_row and b in html_row and n in html_row
        index_row = _row(main_job["index_html"], metric)
        assert label in index_row and f"~{b}" in index_row and f"~{n}" in index_row
        sweep_row = _row(main_job["sweep_html"], metric)
        assert label in sweep_row and f"~{n}" in sweep_row
        notebook = cmp._repr_html_()
        assert label in notebook and b in notebook and n in notebook


def test_device_cycles_never_include_host_time(main_job: dict[str, Any]) -> None:
    cmp: Comparison = main_job["comparison"]
    runtime = cmp.execution.set_index("phase").loc["runtime"]
    device_base = float(cmp.summary.loc["cycles_per_step", "base"])
    # 1,901,454 device cycles + 460,316 runtime cycles (0.3461 ms at 1.33 GHz) = 2,361,770: the figure
    # the execution section used to call cycles per step
    assert device_base == 1_901_454 and runtime["base_cycles"] == 460_316
    stacked = f"{device_base + runtime['base_cycles']:,.0f}"
    for name in ("terminal", "markdown", "html"):
        # the trace section shows run 1 (the first steady-state run), which starts where run 0's
        # device and host time end: an interval's start ("2,361,770–4,263,224"), no per-step figure
        text = main_job[name].replace(f"{stacked}–", "").replace(f"{stacked}\\u2013", "")  # the chart's JSON
        assert stacked not in text, name
    execution = main_job["html"][main_job["html"].index('<section id="execution"'):]
    execution = execution[:execution.index("</section>")]
    table = execution[execution.index('id="execution-table"'):execution.index('id="time-table"')]
    assert "runtime" not in re.sub(r"<[^>]+>", " ", table)
    assert "Device cycles per step" in table and "1,901,454" in table and "4,659,817" in table
    times = re.sub(r"<[^>]+>", " ", execution[execution.index('id="time-table"'):])
    # device 1,901,454 / 1.33e9 s = 1.430 ms + host 0.346 ms = 1.776 ms
    assert re.search(r"Host/runtime time per step\s+0\.346 ms\s+0\.346 ms", times)
    assert re.search(r"Device time per step\s+1\.430 ms\s+3\.504 ms", times)
    assert re.search(r"Time per session\.run \(device \+ host\)\s+1\.776 ms\s+3\.850 ms", times)


def test_the_verdict_states_the_summary_table(main_job: dict[str, Any]) -> None:
    s = main_job["json"]["summary"]
    # the figures of the summary table the sentences are written from
    assert (s["not_always_live_peak_bytes"]["base"], s["not_always_live_peak_bytes"]["new"]) == (17_463_000, 11_868_796)
    assert (s["peak_liveness_bytes"]["base"], s["peak_liveness_bytes"]["new"]) == (59_561_828, 58_457_216)
    assert (s["max_tile_bytes"]["base"], s["max_tile_bytes"]["new"]) == (215_656, 215_656)
    assert (s["tiles_over_budget"]["base"], s["tiles_over_budget"]["new"]) == (0, 0)
    moves = main_job["json"]["verdict"]["facts"]["moves"]
    assert [(m["role"], m["base"], m["new"], m["sharded_streaming_memory"]) for m in moves] == [
        ("optimizer_state", {"always_live": 0, "not_always_live": 8_749_168, "streaming_memory": 0},
         {"always_live": 0, "not_always_live": 0, "streaming_memory": 1_398_620}, [0, 1_398_620 - 92]),
        ("gathered_weight", {"always_live": 0, "not_always_live": 0, "streaming_memory": 0},
         {"always_live": 0, "not_always_live": 3_729_408, "streaming_memory": 0}, [0, 0]),
    ]
    # the 92 B not sharded: the eight Adam step counters of 4 B and fc4.bias's two moments (20 + 40 B)
    # worked out by hand: 8,749,168 B = 8.34 MiB, 1,398,620 B = 1.33 MiB, 3,729,408 B = 3.56 MiB;
    # peak (11,868,796 - 17,463,000) / 17,463,000 = -32.03%, 16.65 -> 11.32 MiB;
    # liveness -1,104,612 / 59,561,828 = -1.85%, 56.803 -> 55.749 MiB; fullest tile 215,656 B = 210.60 KiB
    # (the 208 KiB non-interleaved region filled, plus the interleaved partials above it);
    # budget 638,976 B = 624.0 KiB; time 1.4297 + 0.3461 = 1.7758 ms -> 3.5036 + 0.3461 = 3.8497 ms (+116.79%);
    # samples 256 / 1.7758 ms = 144,163.1 -> 256 / 3.8497 ms = 66,498.3 (-53.87%)
    # always-live 59,561,828 - 17,463,000 = 42,098,828 B (40.15 MiB) -> 58,457,216 - 11,868,796 = 46,588,420 B
    # (44.43 MiB), +4,489,592 / 42,098,828 = +10.66%; code 25,547,240 -> 28,086,344 B, +2,539,104 B = +2.42 MiB
    assert (s["always_live_bytes"]["base"], s["always_live_bytes"]["new"]) == (42_098_828, 46_588_420)
    assert (s["code_bytes"]["base"], s["code_bytes"]["new"]) == (25_547_240, 28_086_344)
    expected = (
        "offchip-sharded against onchip: the largest moves are optimizer_state 8.3 MiB not-always-live -> 1.3 MiB "
        "Streaming Memory (replica-sharded) and gathered_weight nothing -> 3.6 MiB not-always-live (bytes per replica).",
        "Tile memory: the not-always-live peak fell 32.0% (16.7 MiB -> 11.3 MiB) and always-live memory rose 10.7% "
        "(40.1 MiB -> 44.4 MiB; code +2.4 MiB), so peak liveness fell 1.9% (56.8 MiB -> 55.7 MiB) and the "
        "fullest tile is unchanged at 210.6 KiB; both fit (no tile over its 624.0 KiB budget).",
        "Time per session.run rose 116.8% (1.776 ms -> 3.850 ms), of which device 1.430 ms -> 3.504 ms (+2.074 ms, "
        "largest causes: optimizer_state remote load/store of fc1.weight, fc2.weight and 6 more +2.072 ms (all "
        "exposed), gradient collective of fc1.weight, fc4.bias and 1 more +0.053 ms (all exposed)) and "
        "host/runtime unchanged at 0.346 ms; 53.9% fewer samples per second (144,163.1 -> 66,498.3).",
    )
    assert tuple(main_job["json"]["verdict"]["sentences"]) == expected
    # first in every comparison: the terminal, markdown and the page
    terminal = main_job["terminal"]
    assert terminal.index("\nVerdict\n") < terminal.index("\nWhere the memory moved\n")
    flat = " ".join(terminal.split())
    markdown = " ".join(main_job["markdown"].replace("\\", "").replace("&gt;", ">").split())
    html = " ".join(main_job["html"].replace("&gt;", ">").split())
    for sentence in expected:
        assert sentence in flat and sentence in markdown and sentence in html
    assert main_job["markdown"].index("### Verdict") < main_job["markdown"].index("### Where the memory moved")
    sections = re.findall(r'<section id="([a-z-]+)" class="section">', main_job["html"])
    assert sections[0] == "verdict"
    # the N-way view (index) says the same in one sentence per variant, then what fits and is fastest
    index = main_job["index_json"]["verdict"]["sentences"]
    assert index == [
        "offchip-sharded against onchip: not-always-live peak -32.0%, always-live +10.7%, peak liveness -1.9%, "
        "fullest tile 0.0%, "
        "time per session.run +116.8%, samples per second -53.9%; largest move: optimizer_state 8.3 MiB "
        "not-always-live -> 1.3 MiB Streaming Memory; fits.",
        "All 2 variants with a report fit in tile memory. Fastest: onchip (144,163.1 samples per second).",
    ]
    index_html = " ".join(main_job["index_html"].replace("&gt;", ">").split())
    assert all(sentence in index_html for sentence in index)
    assert index_html.index("Verdict") < index_html.index("Side by side")


def test_streaming_memory_is_never_coloured_as_a_cost(main_job: dict[str, Any]) -> None:
    page = main_job["html"]
    table = page[page.index('id="ledger-parameters"'):]
    table = table[:table.index("</table>")]
    fc1 = re.search(r'<tr data-name="fc1.weight">(.*?)</tr>', table, re.DOTALL).group(1)
    cells = re.findall(r"<td([^>]*)>([^<]*)</td>", fc1)
    # Parameter, Always-live, Not-always-live, Base / New / Diff tile memory, Streaming Memory
    assert [unescape(text) for _, text in cells] == ["fc1.weight", "", "7.7 MiB", "7.7 MiB", "7.7 MiB", "0 B",
                                           "0 B -> 588.0 KiB (+588.0 KiB)"]
    assert "tone-" not in cells[-1][0] and "tone-" not in cells[5][0]
    summary_row = re.search(r'<tr data-metric="streaming_memory_bytes"[^>]*>(.*?)</tr>', page, re.DOTALL).group(1)
    assert "tone-" not in summary_row
    rows = re.findall(r'<tr[^>]*data-location="Streaming Memory"[^>]*>(.*?)</tr>', page, re.DOTALL)
    assert rows and not any("tone-" in row for row in rows)
    index = main_job["index_html"]
    ledger = index[index.index('id="ledger-table"'):]
    streaming = [r for r in re.findall(r"<tr>(.*?)</tr>", ledger, re.DOTALL) if ">Streaming Memory<" in r]
    assert streaming and not any("tone-" in row for row in streaming)
    assert "Streaming Memory is not coloured" in index and "Streaming Memory is not coloured" in page


def test_the_liveness_rule_is_stated_wherever_the_ledger_is(main_job: dict[str, Any]) -> None:
    cmp: Comparison = main_job["comparison"]
    rule = main_job["json"]["liveness_rule"]
    assert rule.startswith("popxl writes every variable from the host") and LIVENESS_RULE_SOURCE in rule
    show = CliRunner().invoke(cli, ["show", str(main_job["dir"] / "onchip")])
    compared = CliRunner().invoke(cli, ["compare", str(main_job["dir"] / "onchip"),
                                        str(main_job["dir"] / "offchip-sharded")])
    outputs = {
        "run": main_job["terminal"], "show": show.output, "compare": compared.output,
        "markdown": main_job["markdown"].replace("\\", ""), "html": main_job["html"],
        "index": main_job["index_html"], "notebook comparison": cmp._repr_html_(),
        "notebook report": cmp.base._repr_html_(),
    }
    for name, text in outputs.items():
        assert rule in " ".join(text.split()), name


def test_run_prints_the_sections_the_readme_lists_in_order(main_job: dict[str, Any]) -> None:
    terminal = main_job["terminal"]
    titles = [SECTION_NAMES[name] for name in SUMMARY_SECTIONS]
    positions = [terminal.index(f"\n{title}\n") for title in titles]
    assert positions == sorted(positions)
    assert titles == ["Verdict", "What differs", "Where the memory moved", "Memory ledger", "Time diff",
                      "What changed the not-always-live peak", "Summary", "Memory by category", "Variables"]
    readme = " ".join((ROOT / "README.md").read_text().split())
    promise = readme[readme.index("it prints the whole comparison, in this order:"):]
    promise = promise[:promise.index("(the files hold every section)")]
    words = {"Verdict": "the verdict", "What differs": "what differs in the two configurations",
             "Where the memory moved": "where the memory moved",
             "Memory ledger": "the memory ledger", "Time diff": "the time diff",
             "What changed the not-always-live peak": "what changed the not-always-live peak",
             "Summary": "the summary", "Memory by category": "memory by category",
             "Variables": "the largest variable changes"}
    spots = [promise.index(words[title]) for title in titles]
    assert spots == sorted(spots)


def test_variables_says_why_its_sum_is_not_memory_in_use(main_job: dict[str, Any]) -> None:
    result = CliRunner().invoke(cli, ["variables", str(main_job["dir"] / "onchip"), "--top", "10"])
    text = " ".join(result.output.split())
    assert "Total of the selection" not in text
    assert "Sum of the 603 selected rows: 105.1 MiB, not memory in use:" in text
    assert "Memory in use (per replica): peak liveness 56.8 MiB = always-live 40.1 MiB + not-always-live peak 16.7 MiB." \
        in text
    assert ("8 rows shown are call instances of one tensor, Net_subgraph(0)_bwd/Gradient___fc1/weight "
            "(@1, @2, ...: one allocation per call, live at different steps).") in text
