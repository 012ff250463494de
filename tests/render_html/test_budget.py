"""Size and time budget: two reports of a million variables give a small page, quickly."""

from __future__ import annotations

import time

import numpy as np
import pytest
from html_fixtures import build_report

from profcompare.compare import compare
from profcompare.model import Report, make_frame
from profcompare.render.html import HtmlRenderer
from profcompare.render.html_ledger import LEDGER_MAX_ROWS
from profcompare.render.html_model import HTML_MAX_VARIABLE_ROWS

VARIABLES = 1_000_000
PARAMETERS = 10_000
STEPS = 100_000


def _huge(variant: str, seed: int) -> Report:
    small = build_report(variant)
    rng = np.random.default_rng(seed)
    # the two reports share most names; each has some of its own (added / removed rows)
    ids = np.arange(VARIABLES) + (0 if seed == 1 else VARIABLES // 10)
    names = np.char.add("block/var", ids.astype(str)).astype(object)
    kinds = np.array(["weight", "activation", "optimizer_state"], dtype=object)
    variables = make_frame(
        "variables",
        {
            "name": names,
            "bytes": rng.integers(4, 100_000, VARIABLES),
            "always_live": rng.random(VARIABLES) < 0.5,
            "kind": kinds[rng.integers(0, 3, VARIABLES)],
            "dtype": np.full(VARIABLES, "float16", dtype=object),
            "shape": np.full(VARIABLES, "[16]", dtype=object),
            "tiles": rng.integers(1, 1472, VARIABLES),
            "first_step": np.zeros(VARIABLES, dtype="int64"),
            "last_step": np.ones(VARIABLES, dtype="int64"),
            # 10,000 parameters (a large model's): the ledger tables stay within the page budget
            "parameter": np.char.add("block.layer", (ids % PARAMETERS).astype(str)).astype(object),
            "role": kinds[rng.integers(0, 3, VARIABLES)],
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
def test_million_variable_comparison_renders_fast_and_small() -> None:
    comparison = compare(_huge("onchip", 1), _huge("offchip-sharded", 2))
    renderer = HtmlRenderer()
    # one-time costs (template compilation, matplotlib's font cache) are not part of the budget
    renderer.render(build_report("onchip"), top=5)
    start = time.perf_counter()
    page = renderer.render(comparison, top=200)
    seconds = time.perf_counter() - start
    size = len(page.encode("utf-8"))
    assert seconds < 3.0, f"rendering took {seconds:.2f} s"
    assert size < 5_000_000, f"page is {size:,} bytes"
    total = len(comparison.variables)
    assert f"{HTML_MAX_VARIABLE_ROWS:,} of {total:,} variables on this page (its bound)" in page
    body = page[page.index('id="variables-table"') :]
    body = body[body.index("<tbody>") : body.index("</tbody>")]
    assert body.count("<tr") == HTML_MAX_VARIABLE_ROWS  # the page bound, whatever --top
    for table in ("ledger-parameters", "ledger-rows"):
        body = page[page.index(f'id="{table}"') :]
        assert body[body.index("<tbody>") : body.index("</tbody>")].count("<tr") == LEDGER_MAX_ROWS
    single = renderer.render(comparison.new, top=200)
    assert len(single.encode("utf-8")) < 5_000_000
