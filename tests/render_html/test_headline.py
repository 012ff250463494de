"""The headline (the comparison in one sentence, :func:`profcompare.render.verdict_words.headline`)
first under the title of every comparison output, and of a run's index page, escaped wherever a
variant's name can carry markup."""

from __future__ import annotations

import html as htmllib
import json
import re

import pytest
from html_fixtures import ESCAPE_NAME, build_report

from profcompare.analysis.nway import nway_table
from profcompare.comparison import Comparison, compare
from profcompare.model import Report
from profcompare.render.base import get_renderer
from profcompare.render.nway import nway_document, render_nway_html, table_headline
from profcompare.render.verdict_words import comparison_headline

HOSTILE = "offchip-sharded" + ESCAPE_NAME


@pytest.fixture(scope="module")
def hostile() -> Comparison:
    """onchip against a variant whose name is markup."""
    return compare(build_report("onchip"), build_report(HOSTILE))


def _headline_paragraph(page: str) -> str:
    found = re.findall(r'<p id="headline" class="headline">(.*?)</p>', page, re.DOTALL)
    assert len(found) == 1, found
    return found[0]


def test_the_headline_names_both_variants_and_pins_its_words(hostile: Comparison) -> None:
    assert comparison_headline(hostile) == f"{HOSTILE} vs onchip: 3.0% less peak liveness, 1.24x slower; both fit"


def test_the_comparison_page_shows_the_headline_escaped_first_under_its_title(hostile: Comparison) -> None:
    page = get_renderer("html").render(hostile)
    shown = _headline_paragraph(page)
    assert "<b>" not in shown and "&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;" in shown
    assert htmllib.unescape(shown) == comparison_headline(hostile)
    # first under the title: between the h1 and the report cards, above the verdict
    assert page.index("</h1>") < page.index('id="headline"') < page.index('class="cards"') < page.index('id="verdict"')


def test_a_reports_page_has_no_headline(onchip: Report) -> None:
    assert 'id="headline"' not in get_renderer("html").render(onchip)


def test_markdown_json_and_notebook_carry_the_same_headline(hostile: Comparison) -> None:
    words = comparison_headline(hostile)
    lines = get_renderer("markdown").render(hostile).splitlines()
    assert lines[2] == ("**offchip-sharded&lt;/script&gt;&lt;b&gt;x&lt;/b&gt; vs onchip: 3.0% less peak liveness, "
                        "1.24x slower; both fit**")
    data = json.loads(get_renderer("json").render(hostile))
    assert data["headline"] == words and data["schema_version"] == 9
    notebook = hostile._repr_html_()
    shown = re.findall(r'<div class="profcompare-headline"[^>]*>(.*?)</div>', notebook)
    assert [htmllib.unescape(s) for s in shown] == [words] and "<b>x" not in notebook


def test_the_index_page_and_json_show_the_nway_headline_escaped(onchip: Report) -> None:
    table = nway_table([("onchip", onchip), (HOSTILE, build_report(HOSTILE))], statuses={HOSTILE: "oom"})
    words = table_headline(table)
    assert words == (f"2 variants against onchip: 1 of 2 fit ({HOSTILE} do NOT); least peak liveness {HOSTILE} "
                     "(-3.0%); fastest onchip (the base)")
    assert nway_document(table)["headline"] == words
    page = render_nway_html(table, title="run", headline=words)
    shown = _headline_paragraph(page)
    assert "<b>" not in shown and htmllib.unescape(shown) == words
    assert page.index("</h1>") < page.index('id="headline"') < page.index('id="verdict"')
    # a page not given one (a sweep's) shows none
    assert 'id="headline"' not in render_nway_html(table, title="sweep")
