"""Size and work budget: two reports of a million variables give a small page, and rendering it
does no more work than rendering a page of ten thousand variables (the page shows a bounded number
of rows whatever the report holds). Render time is measured by benchmarks/bench_html.py."""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from html_fixtures import build_report

from profcompare.comparison import compare
from profcompare.model import Report, make_frame
from profcompare.render.html import HtmlRenderer
from profcompare.render.sections.ledger import LEDGER_MAX_ROWS
from profcompare.render.html_model import HTML_MAX_VARIABLE_ROWS

VARIABLES = 1_000_000
PARAMETERS = 10_000
STEPS = 100_000


def _python_calls(render: Callable[[], Any]) -> tuple[int, Any]:
    """The number of Python function calls ``render()`` makes (a machine-independent measure of
    its work), and what it returned."""
    profile = cProfile.Profile()
    result = profile.runcall(render)
    return pstats.Stats(profile).total_calls, result


def _huge(variant: str, seed: int, count: int = VARIABLES) -> Report:
    small = build_report(variant)
    rng = np.random.default_rng(seed)
    # the two reports share most names; each has some of its own (added / removed rows)
    ids = np.arange(count) + (0 if seed == 1 else count // 10)
    names = np.char.add("block/var", ids.astype(str)).astype(object)
    kinds = np.array(["weight", "activation", "optimizer_state"], dtype=object)
    variables = make_frame(
        "variables",
        {
            "name": names,
            "bytes": rng.integers(4, 100_000, count),
            "always_live": rng.random(count) < 0.5,
            "kind": kinds[rng.integers(0, 3, count)],
            "dtype": np.full(count, "float16", dtype=object),
            "shape": np.full(count, "[16]", dtype=object),
            "tiles": rng.integers(1, 1472, count),
            "first_step": np.zeros(count, dtype="int64"),
            "last_step": np.ones(count, dtype="int64"),
            # 10,000 parameters (a large model's): the ledger tables stay within the page budget
            "parameter": np.char.add("block.layer", (ids % PARAMETERS).astype(str)).astype(object),
            "role": kinds[rng.integers(0, 3, count)],
        },
    )
    liveness = make_frame(
        "liveness",
        {
            "step": np.arange(STEPS),
            "program": np.char.add("prog", (np.arange(STEPS) % 997).astype(str)).astype(object),
            "program_type": np.full(STEPS, "OnTileExecute", dtype=object),
            "not_always_live_bytes": rng.integers(1_000_000, 9_000_000, STEPS),
        },
    )
    return Report.build(
        small.meta,
        tiles=small.tiles,
        categories=small.categories,
        variables=variables,
        liveness=liveness,
        code=small.code,
        execution=small.execution,
        remote_buffers=small.remote_buffers,
    )


@pytest.mark.slow
def test_million_variable_comparison_renders_small_with_bounded_work() -> None:
    comparison = compare(_huge("onchip", 1), _huge("offchip-sharded", 2))
    # 10,000 variables (and as many parameters) already fill every bounded table of the page
    reference = compare(_huge("onchip", 1, 10_000), _huge("offchip-sharded", 2, 10_000))
    renderer = HtmlRenderer()
    # one-time costs (template compilation, matplotlib's font cache) are not part of the budget
    renderer.render(build_report("onchip"), top=5)
    reference_calls, _ = _python_calls(lambda: renderer.render(reference, top=200))
    calls, page = _python_calls(lambda: renderer.render(comparison, top=200))
    # 100 times the variables, the same page: a Python step per variable would add 1,000,000 calls
    # (about 14% of the page's 7 million); whole-column numpy/pandas work adds almost none
    assert calls < 1.1 * reference_calls, (
        f"{calls:,} Python calls for 1,000,000 variables vs {reference_calls:,} for 10,000")
    size = len(page.encode("utf-8"))
    assert size < 5_000_000, f"page is {size:,} bytes"
    total = len(comparison.variables)
    assert (f"Top {HTML_MAX_VARIABLE_ROWS:,} of {total:,} variables shown; {total - HTML_MAX_VARIABLE_ROWS:,} more in "
            "the &#39;other&#39; row.") in page
    assert f"This page holds at most {HTML_MAX_VARIABLE_ROWS:,} variables" in page
    body = page[page.index('id="variables-table"') :]
    body = body[body.index("<tbody>") : body.index("</tbody>")]
    assert body.count("<tr") == HTML_MAX_VARIABLE_ROWS  # the page bound, whatever --top
    for table in ("ledger-parameters", "ledger-rows"):
        body = page[page.index(f'id="{table}"') :]
        assert body[body.index("<tbody>") : body.index("</tbody>")].count("<tr") == LEDGER_MAX_ROWS
    single = renderer.render(comparison.new, top=200)
    assert len(single.encode("utf-8")) < 5_000_000
