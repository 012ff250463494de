"""HTML page benchmark: size and load time of the comparison page with the interactive charts.

Usage::

    python benchmarks/bench_html.py [--steps 100000] [--variables 100000] [--trace-blocks 100000] [--repeat 5]

Builds two synthetic reports in memory (``make_scale_reports.py``: 1472 tiles, ``--variables``
variables with liveness intervals, ``--steps`` liveness steps; the second a perturbation of the
first; each with an execution trace of ``--trace-blocks`` blocks in op groups of eight, one in
ten a SyncAns over the next blocks), compares them and renders the HTML page. Prints:

* the render time (build the page model + fill the template), median of ``--repeat``;
* the page size and what it is made of (the inlined charting library, each chart's JSON, the
  variables table, the rest);
* the load time in headless Chromium (``/usr/bin/chromium`` or ``chromium`` on PATH, through
  Playwright): from navigation start until both charts are drawn (``data-ready``), median of
  ``--repeat`` fresh pages; skipped with a message when Chromium or Playwright is missing;
* for the choice of library: the same liveness curves drawn by Bokeh (as the page does) and by
  Plotly (when installed), each in a minimal page with its library inlined: size and load time.

Checks the targets: page < 5 MB (10**6 bytes per MB) for a 100,000-step liveness; render < 3 s
(median), set for a comparison of 1,000,000 variables (``--variables 1000000``): the page shows a
bounded number of rows, so the render time barely depends on the variables (the test suite checks
that by counting the renderer's Python calls, tests/render_html/test_budget.py).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TARGET_PAGE_BYTES = 5 * 10**6
TARGET_RENDER_SECONDS = 3.0


def _chromium() -> str | None:
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def _with_trace(report, blocks: int, seed: int):  # type: ignore[no-untyped-def]
    """``report`` with a synthetic trace of ``blocks`` blocks on its IPU: compute, exchange and
    sync blocks back to back (100-5,000 cycles), every tenth a SyncAns over the next ones, in
    groups of eight."""
    import numpy as np

    from profcompare.model import TABLES, Report, make_frame

    rng = np.random.default_rng(seed)
    kinds = np.array(["OnTileExecute", "InternalSync", "DoExchange", "OnTileExecute", "ExternalSync",
                      "GlobalExchange", "StreamCopyBegin", "StreamCopy", "StreamCopyEnd"], dtype=object)
    lengths = rng.integers(100, 5000, blocks)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    types = kinds[rng.integers(0, len(kinds), blocks)]
    waiting = np.arange(blocks) % 10 == 0
    types[waiting] = "SyncAns"
    ends[waiting] = np.minimum(starts[waiting] + 3 * lengths[waiting], ends[-1])
    names = np.char.add("prog", (np.arange(blocks) % 997).astype(str)).astype(object)
    # runs of 8 blocks in one op's group (the SyncAns too), 300 ops over and over: the flame rows' input
    groups = np.char.add("op", (np.arange(blocks) // 8 % 300).astype(str)).astype(object)
    trace = make_frame("trace", {"ipu": np.zeros(blocks, dtype=np.int64), "cycles_from": starts, "cycles_to": ends,
                                 "type": types, "name": names, "program": names, "parent": groups,
                                 "depth": np.ones(blocks, dtype=np.int64)})
    tables = {t: getattr(report, t) for t in TABLES if t != "trace"}
    return Report(meta=report.meta.replace(capabilities=report.meta.capabilities | {"trace"}), trace=trace, **tables)


def _load_times(path: Path, repeat: int,
                selectors: tuple[str, ...] = ("#chart-liveness", "#chart-tiles", "#chart-trace")) -> list[float] | str:
    executable = _chromium()
    if executable is None:
        return "chromium not found"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "playwright not installed"
    times = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        try:
            for _ in range(repeat):
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.goto(path.as_uri())
                for selector in selectors:
                    page.wait_for_selector(f"{selector}[data-ready=true]", state="attached", timeout=60_000)
                # navigation start -> now, measured by the page's own clock
                times.append(page.evaluate("() => performance.now()") / 1000.0)
                page.close()
        finally:
            browser.close()
    return times


_MINIMAL_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{name}</title></head><body>
<div id="chart" style="width:1200px;height:360px"></div><script>{library}</script><script>{draw}</script></body></html>"""


def _library_pages(base, new, comparison, repeat: int) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The same liveness curves drawn by Bokeh (as the page does) and by Plotly (when installed),
    each in a minimal self-contained page; returns name -> "size, load time"."""
    import json

    import numpy as np

    from profcompare.render import interactive

    chart = interactive.liveness_chart([base, new], ["base", "new"], aligned=comparison.liveness)
    pages = {
        f"Bokeh {interactive.bokeh_version()}": _MINIMAL_PAGE.format(
            name="bokeh",
            library=interactive.bokeh_js(),
            draw="Bokeh.embed.embed_item(" + json.dumps(chart.item) + ', "chart").then(function () {'
            ' document.body.setAttribute("data-ready", "true"); });',
        )
    }
    try:
        import plotly
        from plotly.offline import get_plotlyjs

        traces = []
        for side in ("base", "new"):
            values = comparison.liveness[f"{side}_not_always_live_bytes"].to_numpy(dtype="float64", na_value=np.nan)
            cut = interactive.buckets(values, interactive.LIVENESS_BUCKETS)
            traces.append({"x": cut.start.tolist(), "y": np.nan_to_num(cut.high).tolist(), "mode": "lines",
                           "line": {"shape": "hv"}, "name": side, "text": [f"steps {a}-{b}" for a, b in zip(cut.start, cut.end)]})
        pages[f"Plotly {plotly.__version__}"] = _MINIMAL_PAGE.format(
            name="plotly",
            library=get_plotlyjs(),
            draw="Plotly.newPlot('chart', " + json.dumps(traces) + ', {hovermode: "x unified"}).then(function () {'
            ' document.body.setAttribute("data-ready", "true"); });',
        )
    except ImportError:
        pages["Plotly"] = ""
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in pages.items():
            if not text:
                results[name] = "not installed (pip install plotly to compare)"
                continue
            path = Path(tmp) / f"{name.split()[0].lower()}.html"
            path.write_text(text, encoding="utf-8")
            loads = _load_times(path, repeat, selectors=("body",))
            timing = loads if isinstance(loads, str) else f"{statistics.median(loads):.2f} s"
            results[name] = f"{len(text.encode('utf-8')) / 10**6:.2f} MB, {timing}"
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--variables", type=int, default=100_000)
    parser.add_argument("--trace-blocks", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    from make_scale_reports import make_base, perturb

    from profcompare.comparison import compare
    from profcompare.render import interactive
    from profcompare.render.html import HtmlRenderer

    base = make_base(args.variables, args.steps)
    new = perturb(base)
    if args.trace_blocks:
        base, new = _with_trace(base, args.trace_blocks, 1), _with_trace(new, args.trace_blocks, 2)
    comparison = compare(base, new)
    renders = []
    html = ""
    for _ in range(args.repeat):
        start = time.perf_counter()
        html = HtmlRenderer().render(comparison)
        renders.append(time.perf_counter() - start)
    size = len(html.encode("utf-8"))
    library = len(interactive.bokeh_js().encode("utf-8"))
    parts = {"charting library (BokehJS core, inlined)": library}
    for chart in ("chart-liveness", "chart-tiles", "chart-trace"):
        match = re.search(rf'data-chart="{chart}"[^>]*>(.*?)</script>', html, re.S)
        parts[f"{chart} JSON"] = len(match.group(1).encode("utf-8")) if match else 0
    table = re.search(r'<table id="variables-table".*?</table>', html, re.S)
    parts["variables table"] = len(table.group(0).encode("utf-8")) if table else 0
    parts["rest (other tables, SVG figures, page data, CSS, JS)"] = size - sum(parts.values())

    print(f"reports: {len(base.liveness):,} / {len(new.liveness):,} liveness steps, "
          f"{len(base.variables):,} / {len(new.variables):,} variables, {len(base.tiles):,} tiles, "
          f"{len(base.trace):,} / {len(new.trace):,} trace blocks")
    print(f"render: median {statistics.median(renders):.2f} s over {args.repeat} (min {min(renders):.2f}, "
          f"max {max(renders):.2f})")
    print(f"page: {size / 10**6:.2f} MB ({size:,} bytes)")
    for name, value in parts.items():
        print(f"  {name:<52} {value / 10**6:6.2f} MB")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "diff.html"
        path.write_text(html, encoding="utf-8")
        loads = _load_times(path, args.repeat)
    if isinstance(loads, str):
        print(f"load in Chromium: skipped ({loads})")
    else:
        print(f"load in Chromium until the three charts are drawn: median {statistics.median(loads):.2f} s over "
              f"{len(loads)} (min {min(loads):.2f}, max {max(loads):.2f})")

    print("charting libraries: a page with only the liveness curves (2 x 1,000 buckets, hover) in each,")
    print("library inlined; size and load time until drawn (median):")
    for name, result in _library_pages(base, new, comparison, args.repeat).items():
        print(f"  {name:<28} {result}")

    ok = size < TARGET_PAGE_BYTES
    print(f"target page < {TARGET_PAGE_BYTES / 10**6:.0f} MB: {'ok' if ok else 'MISSED'}")
    fast = statistics.median(renders) < TARGET_RENDER_SECONDS
    print(f"target render < {TARGET_RENDER_SECONDS:.0f} s (median): {'ok' if fast else 'MISSED'}")
    return 0 if ok and fast else 1


if __name__ == "__main__":
    raise SystemExit(main())
