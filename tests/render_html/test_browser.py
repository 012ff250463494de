"""The HTML diff in a real browser: headless Chromium driven by Playwright (no browser download).

Checks what a user does with the page: it loads without console errors or network requests,
clicking a header cell sorts the variable table, typing in the filter box and choosing a status
filters it (row counts checked against the page's JSON), the liveness chart zooms into a range
of steps and its tooltip names each report's program, bytes and largest live variables, the
toggles switch the charts' curves. Writes a full-page screenshot to
tests/artifacts/html_diff.png for a human look.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from html_fixtures import ESCAPE_NAME

from profcompare.comparison import compare
from profcompare.model import Report
from profcompare.render.format import format_bytes
from profcompare.render.html import HtmlRenderer


def find_chromium() -> str | None:
    """Debian's Chromium: on PATH (as .ci/run looks for it) or at /usr/bin/chromium."""
    for candidate in (shutil.which("chromium"), shutil.which("chromium-browser"), "/usr/bin/chromium"):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


CHROMIUM = find_chromium()
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def comparison(onchip: Report, offchip: Report):
    return compare(onchip, offchip)


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory, comparison) -> Path:
    path = tmp_path_factory.mktemp("html") / "diff.html"
    path.write_text(HtmlRenderer().render(comparison, top=30), encoding="utf-8")
    return path


def open_sections(page, *ids: str) -> None:
    """Open the folded detail sections ``ids`` by their buttons (a closed section's charts are
    drawn when it opens)."""
    for section in ids:
        if page.get_attribute(f"#{section}-toggle", "aria-expanded") != "true":
            page.click(f"#{section}-toggle")


def _names(page) -> list[str]:
    return page.eval_on_selector_all(
        "#variables-table tbody tr:not([hidden])", "rows => rows.map(r => r.getAttribute('data-name'))"
    )


def _column(page, index: int) -> list[float | None]:
    return page.eval_on_selector_all(
        "#variables-table tbody tr:not([hidden])",
        f"""rows => rows.map(r => {{
            const v = r.cells[{index}].getAttribute('data-sort');
            return v === null ? null : parseFloat(v);
        }})""",
    )


def test_html_diff_in_chromium(browser, page_file: Path, comparison) -> None:
    compare_rows = comparison.variables
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    requests: list[str] = []
    page.on(
        "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:", "about:")) else None)
    page.goto(page_file.as_uri())
    page.wait_for_load_state("load")

    assert page.title() == "profcompare: onchip (base) vs offchip-sharded (new)"
    assert page.locator(".badge-sim").count() == 2
    # every chart is drawn by BokehJS (no static SVG figure): the ledger, categories, liveness,
    # tiles, code and execution
    assert page.locator("figure.plot").count() == 0
    open_sections(page, "tiles", "variables", "code", "execution")
    for chart in ("ledger-plot", "chart-categories", "chart-liveness", "chart-tiles", "chart-code", "chart-execution"):
        page.wait_for_selector(f"#{chart}[data-ready=true]", state="attached", timeout=60_000)
    # the hostile name is a table row's text, and nothing injected a <b> element
    assert ESCAPE_NAME in _names(page)
    assert page.locator("#variables-table b").count() == 0

    headers = page.locator("#variables-table thead th")
    titles = [t.strip() for t in headers.all_inner_texts()]
    new_col = next(i for i, t in enumerate(titles) if t.startswith("New"))
    # the whole header cell is the click target: click its padding, outside the label button
    headers.nth(new_col).click(position={"x": 3, "y": 3})
    values = _column(page, new_col)
    assert values == sorted(values, reverse=True) and values[0] > values[-1]
    assert headers.nth(new_col).get_attribute("aria-sort") == "descending"
    headers.nth(new_col).locator("button").click()  # the label (keyboard target) sorts once too
    assert _column(page, new_col) == sorted(values)
    assert headers.nth(new_col).get_attribute("aria-sort") == "ascending"
    # text column: A to Z
    headers.nth(0).click(position={"x": 3, "y": 3})
    names = _names(page)
    assert names == sorted(names, key=str.lower)

    total = len(names)
    page.fill("#variable-filter", "staging")
    filtered = _names(page)
    assert filtered and all("staging" in n for n in filtered) and len(filtered) < total
    # every variable is in the page (under its row bound): the count is over all of them
    assert total == len(compare_rows)
    assert page.inner_text("#variable-count") == f"{len(filtered)} of {total} rows match"
    page.select_option("#variable-status", "added")
    assert _names(page) == filtered  # every staging buffer is new
    page.select_option("#variable-status", "removed")
    assert _names(page) == []
    page.select_option("#variable-status", "")
    page.fill("#variable-filter", "")
    # each status shows exactly the rows the page's JSON has with that status
    data = json.loads(page.inner_text("#profcompare-data"))
    status_at = data["variables"]["columns"].index("status")
    for status in ("added", "removed", "grew", "shrank", "unchanged"):
        expected = sorted(r[0] for r in data["variables"]["rows"] if r[status_at] == status)
        assert expected == sorted(compare_rows.loc[compare_rows["status"] == status, "name"])
        if status not in page.eval_on_selector_all("#variable-status option", "os => os.map(o => o.value)"):
            assert expected == []
            continue
        page.select_option("#variable-status", status)
        assert sorted(_names(page)) == expected
        shown = f"{len(expected)} of {total} rows match"
        assert page.inner_text("#variable-count") == shown
    page.select_option("#variable-status", "")
    page.fill("#variable-filter", r"^layer[01]/weight/(first|second)_moment$")
    page.check("#variable-regex")
    assert sorted(_names(page)) == sorted(f"layer{i}/weight/{m}_moment" for i in (0, 1) for m in ("first", "second"))
    page.fill("#variable-filter", "(")  # an invalid regex is reported, not thrown
    assert page.inner_text("#variable-error") == "invalid regular expression"
    page.fill("#variable-filter", "")
    page.uncheck("#variable-regex")
    assert len(_names(page)) == total

    # other tables sort too
    page.locator("#categories-table thead th").nth(0).locator("button").click()
    categories = page.eval_on_selector_all(
        "#categories-table tbody tr", "rows => rows.map(r => r.cells[0].textContent)"
    )
    assert categories == sorted(categories, key=str.lower)

    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(page_file.as_uri())
    page.screenshot(path=str(ARTIFACTS / "html_diff.png"), full_page=True)
    assert (ARTIFACTS / "html_diff.png").stat().st_size > 50_000
    assert problems == []
    assert requests == []
    page.close()


# --------------------------------------------------------------------------------------------
# the memory ledger


def _ledger_rows(page, attribute: str = "name") -> list[str]:
    return page.eval_on_selector_all(
        "#ledger-rows tbody tr:not([hidden])", f"rows => rows.map(r => r.getAttribute('data-{attribute}'))"
    )


def test_ledger_leads_the_diff_and_sorts_and_filters(browser, page_file: Path, comparison) -> None:
    from profcompare.render.ledger_words import LOCATION_WORDS, MOVES_SHOWN, move_sentence

    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.goto(page_file.as_uri())
    page.wait_for_load_state("load")
    # the verdict comes first, then the ledger (moves, ledger), where the time went, the liveness
    # over time and what changed its peak, then the summary
    sections = page.eval_on_selector_all("main > section.section", "s => s.map(x => x.id)")
    assert sections[:8] == ["verdict", "config", "moves", "ledger", "time-diff", "liveness", "peak", "summary"]
    moves = comparison.ledger_moves(None)
    items = [t.strip() for t in page.locator("#moves ol.moves li").all_inner_texts()]
    assert items == [move_sentence(m) for m in moves.head(MOVES_SHOWN).itertuples(index=False)]
    assert items[0].startswith("layer0.weight optimizer_state: ")
    # the stacked bars are drawn, one pair per parameter (its nonzero segments)
    page.wait_for_selector("#ledger-plot[data-ready=true]", state="attached", timeout=60_000)
    plot = page.locator("#ledger-plot-target")
    box = plot.bounding_box()
    assert box is not None and box["width"] > 400 and box["height"] > 150
    shown = comparison.ledger_by_parameter().head(12)
    segments = page.evaluate("""() => ["base", "new"].flatMap(side => ["always_live", "not_always_live",
        "streaming_memory"].map(loc => profcompareChartModel("ledger-plot:" + side + ":" + loc).data.left.length))
        .reduce((a, b) => a + b, 0)""")
    expected = sum(int((shown[f"{side}_{loc}"] > 0).sum()) for side in ("base", "new")
                   for loc in ("always_live", "not_always_live", "streaming_memory"))
    assert segments == expected > len(shown)

    # the per-parameter table sorts by its tile-memory diff column, largest first
    header = page.locator("#ledger-parameters thead th[data-key=delta]")
    header.click(position={"x": 3, "y": 3})
    deltas = page.eval_on_selector_all(
        "#ledger-parameters tbody tr", "rows => rows.map(r => parseFloat(r.cells[5].getAttribute('data-sort')))"
    )
    expected = comparison.ledger_by_parameter()["delta_tile_memory"].astype(float).tolist()
    assert deltas == sorted(expected, reverse=True)

    # every ledger row is in the page (the page's JSON says none was cut); filters count
    # against the comparison's ledger
    data = json.loads(page.inner_text("#profcompare-data"))["ledger"]
    assert data == {"total": len(comparison.ledger), "shown": len(comparison.ledger), "cut": 0}
    rows = comparison.ledger.to_dict("records")
    assert len(rows) == len(_ledger_rows(page))
    counter = page.locator("div.table-filter[data-table=ledger-rows] .count")
    select_location = "div.table-filter[data-table=ledger-rows] select[data-attr=location]"
    select_status = "div.table-filter[data-table=ledger-rows] select[data-attr=status]"
    page.select_option(select_location, LOCATION_WORDS["streaming_memory"])
    in_sm = [r for r in rows if r["location"] == "streaming_memory"]
    assert len(_ledger_rows(page)) == len(in_sm) > 0
    assert counter.inner_text() == f"{len(in_sm)} of {len(rows)} rows match"
    page.select_option(select_status, "added")
    assert len(_ledger_rows(page)) == sum(r["status"] == "added" for r in in_sm)
    page.select_option(select_location, "")
    page.select_option(select_status, "")
    page.fill("div.table-filter[data-table=ledger-rows] input.filter-text", "layer1.weight")
    names = _ledger_rows(page)
    assert names and all(n.startswith("layer1.weight ") for n in names)
    assert len(names) == sum(r["parameter"] == "layer1.weight" for r in rows)
    # a hostile parameter name is text, never markup
    page.fill("div.table-filter[data-table=ledger-rows] input.filter-text", "")
    assert f"{ESCAPE_NAME} other" in _ledger_rows(page)
    assert page.locator("#ledger b, #moves b, #peak b").count() == 0
    assert problems == []
    page.close()


# --------------------------------------------------------------------------------------------
# the interactive charts


def _x_range(page, chart: str = "chart-liveness") -> tuple[float, float]:
    start, end = page.evaluate(f"() => {{ const r = profcompareChartModel('{chart}:x'); return [r.start, r.end]; }}")
    return float(start), float(end)


def _y_end(page, chart: str) -> float:
    return float(page.evaluate(f"() => profcompareChartModel('{chart}:y').end"))


def _tooltip(page) -> str:
    """The text of the visible chart tooltip ('' if none): BokehJS puts the tooltip element at the
    end of the body, its content in a shadow root (which Playwright's CSS selectors pierce)."""
    tips = page.locator(".bk-Tooltip .bk-tooltip-content")
    texts = [tips.nth(i).inner_text() for i in range(tips.count()) if tips.nth(i).is_visible()]
    return "\n".join(texts)


def _fields(text: str) -> list[tuple[str, str]]:
    """(label, value) pairs of a tooltip: Bokeh draws each row as "label:<tab>value"."""
    pairs = []
    for line in text.splitlines():
        if line.strip():
            label, _, value = line.partition(":\t")
            pairs.append((label.strip(), value.strip()))
    return pairs


def test_liveness_chart_zooms_and_tells_what_is_live(browser, page_file: Path, comparison) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.goto(page_file.as_uri())
    page.wait_for_selector("#chart-liveness[data-ready=true]", state="attached", timeout=60_000)
    page.locator("#chart-liveness").scroll_into_view_if_needed()
    aligned = comparison.liveness
    positions = len(aligned)

    # the whole program first
    start, end = _x_range(page)
    assert start <= 0 and end >= positions
    box = page.locator("#chart-liveness .chart-target").bounding_box()
    middle_y = box["y"] + box["height"] * 0.5

    # hover: the tooltip names both reports' program, bytes and largest live variables at a step;
    # scan across the chart until the step where the hostile variable is live shows up
    seen: dict[int, list[tuple[str, str]]] = {}
    for i in range(60):
        page.mouse.move(box["x"] + box["width"] * (0.05 + 0.9 * i / 59), middle_y)
        text = _tooltip(page)
        if not text:
            continue
        fields = _fields(text)
        assert fields[0][0] == "position"
        seen[int(fields[0][1].replace(",", ""))] = fields
    assert len(seen) >= positions - 2  # (nearly) every step was hovered
    for position, fields in seen.items():
        row = aligned.iloc[position]
        values = dict(fields)
        labels = [label for label, _ in fields]
        assert "base: onchip" in labels and "new: offchip-sharded" in labels
        for side, label in (("base", "base: onchip"), ("new", "new: offchip-sharded")):
            at = labels.index(label)
            block = dict(fields[at + 1 : at + 5])
            if not pd.isna(row[f"{side}_step"]):
                assert fields[at][1] == row["program"]
                assert block["step"] == f"{int(row[f'{side}_step']):,}"
                assert block["not-always-live"] == format_bytes(int(row[f"{side}_not_always_live_bytes"]))
            else:
                assert fields[at][1] == "–"
        assert values["position"] == f"{position:,}"
    # at the steps where it is live, the hostile name is in the tooltip as text, never markup
    hostile = [p for p, fields in seen.items() if any(ESCAPE_NAME in v for _, v in fields)]
    assert hostile, "the variable live at steps 2-3 of the new report was never in a tooltip"
    page.mouse.move(box["x"] + 2, box["y"] + 2)

    # zoom: drag across a third of the chart (box zoom over steps)
    page.mouse.move(box["x"] + box["width"] * 0.35, middle_y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, middle_y, steps=8)
    page.mouse.up()
    page.wait_for_function("() => profcompareChartModel('chart-liveness:x').end - profcompareChartModel('chart-liveness:x').start < 6")
    zoomed = _x_range(page)
    assert zoomed[0] > start and zoomed[1] < end and zoomed[1] - zoomed[0] < (end - start) / 2
    page.mouse.move(box["x"] + box["width"] * 0.5, middle_y)
    page.locator(".bk-Tooltip .bk-tooltip-content").first.wait_for(state="visible")
    position = int(_fields(_tooltip(page))[0][1].replace(",", ""))
    assert zoomed[0] - 1 <= position <= zoomed[1]

    # the toggle adds the always-live bytes to every curve (their own scale otherwise)
    nal_top = _y_end(page, "chart-liveness")
    caption = page.locator("#chart-liveness .chart-caption")
    assert caption.inner_text().startswith("Not-always-live bytes per program step.")
    page.check("input[name=chart-liveness-liveness][value=total]")
    page.wait_for_function(f"() => profcompareChartModel('chart-liveness:y').end > {nal_top} * 1.5")
    # ... and the caption says so, and back
    assert caption.inner_text().startswith("Always-live + not-always-live bytes per program step")
    page.check("input[name=chart-liveness-liveness][value=nal]")
    assert caption.inner_text().startswith("Not-always-live bytes per program step.")
    page.check("input[name=chart-liveness-liveness][value=total]")
    always = max(float(r.tiles["always_live_bytes"].sum()) for r in (comparison.base, comparison.new))
    peak = max(float(comparison.base.liveness["not_always_live_bytes"].max() + comparison.base.tiles["always_live_bytes"].sum()),
               float(comparison.new.liveness["not_always_live_bytes"].max() + comparison.new.tiles["always_live_bytes"].sum()))
    assert _y_end(page, "chart-liveness") * 2**20 >= peak > always

    # tiles: excluding gaps by default, a toggle switches to including gaps
    open_sections(page, "tiles")
    page.wait_for_selector("#chart-tiles[data-ready=true]", state="attached", timeout=60_000)
    curve = "() => Array.from(profcompareChartModel('chart-tiles:curve:0').data.y)"
    excl = page.evaluate(curve)
    assert page.locator("#chart-tiles .chart-caption").inner_text().startswith("Memory per tile, excluding gaps")
    page.check("input[name=chart-tiles-tiles][value=incl]")
    incl = page.evaluate(curve)
    assert page.locator("#chart-tiles .chart-caption").inner_text().startswith("Memory per tile, including gaps")
    tiles = comparison.base.tiles.sort_values("tile")
    unit = 1024.0  # the largest figure is the 624 KiB tile budget: the axis is in KiB per tile
    assert [round(v * unit) for v in excl[:-1]] == tiles["bytes_excluding_gaps"].tolist()
    assert [round(v * unit) for v in incl[:-1]] == tiles["bytes_including_gaps"].tolist()
    assert problems == []
    page.close()
