"""One spelling per concept on every page: locations, the live flag, the empty parameter and the
execution phases read the same in text, markdown, HTML, the N-way index, notebooks and figures."""

from __future__ import annotations

import html.parser
import re

import pytest
from render_text_helpers import samples

from profcompare.comparison import compare
from profcompare.analysis.nway import nway_table
from profcompare.render import plots
from profcompare.render.base import get_renderer
from profcompare.render.labels import live_label, location_label, parameter_label, phase_label
from profcompare.render.nway import render_nway_html, render_nway_text

#: spellings that must not reach a reader (identifiers, or another spelling of the same thing)
FORBIDDEN = (
    r"\bstreaming_memory\b",
    r"\bnot_always_live\b",
    r"(?<![\w.\"])always_live\b",
    r"\bhost_io\b",
    r"[Ss]treaming memory",
    r"\bstreaming Memory",
    r"(?i)\balways live\b",  # also "not always live": the words are hyphenated
    r"(?i)\bnot always-live\b",
    r"\(unattributed\)",  # the empty parameter is "(no parameter)" whatever its role
    r"\bDiff\b(?!\n?\.)",  # new - base is the delta (the page's legend ends "... and the delta Diff.")
    r"% of device cycles",  # a phase's part of the device cycles is its share
)


class _VisibleText(html.parser.HTMLParser):
    """The text a reader sees on a page: text nodes (SVG text too) and tooltip-like attributes,
    not scripts, styles or data attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._hidden += 1
        self.parts += [value for key, value in attrs if key in ("title", "aria-label", "placeholder", "alt") and value]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def _visible(page: str) -> str:
    parser = _VisibleText()
    parser.feed(page)
    return "\n".join(parser.parts)


def _outputs() -> dict[str, str]:
    onchip, offchip = samples.build_report("onchip"), samples.build_report("offchip-sharded")
    diff = compare(onchip, offchip)
    outputs: dict[str, str] = {}
    for fmt in ("text", "markdown", "html"):
        for name, obj in (("comparison", diff), ("report", offchip)):
            rendered = get_renderer(fmt).render(obj, top=50)
            outputs[f"{name} {fmt}"] = _visible(rendered) if fmt == "html" else rendered
    table = nway_table([("onchip", onchip), ("offchip-sharded", offchip)])
    outputs["index html"] = _visible(render_nway_html(table, title="run"))
    outputs["index text"] = render_nway_text(table, title="run")
    outputs["notebook comparison"] = _visible(diff._repr_html_())
    outputs["notebook report"] = _visible(offchip._repr_html_())
    figures = (diff.plot_liveness(), plots.plot_ledger(diff), plots.plot_execution([onchip, offchip]))
    outputs["figure legends"] = "\n".join(
        text.get_text() for fig in figures for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]
        if legend is not None for text in legend.get_texts()
    )
    return outputs


OUTPUTS = _outputs()


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_no_output_spells_a_concept_another_way(name: str) -> None:
    text = OUTPUTS[name]
    for pattern in FORBIDDEN:
        found = re.search(pattern, text)
        assert found is None, f"{name}: {found.group(0)!r} in ...{text[max(found.start() - 60, 0):found.end() + 60]}..."


def test_the_labels() -> None:
    assert [location_label(x) for x in ("always_live", "not_always_live", "streaming_memory")] == [
        "always-live", "not-always-live", "Streaming Memory"]
    assert location_label("not_always_live", title=True) == "Not-always-live"
    assert (live_label(True), live_label(False, title=True)) == ("always-live", "Not-always-live")
    assert parameter_label("fc1.weight", "other") == "fc1.weight"
    assert (parameter_label("", "other"), parameter_label("", "activation"), parameter_label("")) == (
        "(no parameter)", "(no parameter)", "(no parameter)")
    assert (phase_label("streaming_memory"), phase_label("host_io"), phase_label("compute")) == (
        "Streaming Memory", "host I/O", "compute")


def test_the_variables_convention_line_spells_not_always_live_as_the_ledger() -> None:
    from profcompare.render.sections import report_document

    report = samples.build_report("offchip-sharded")
    variables = report.variables.assign(always_live=False)
    written = report.__class__.build(report.meta, **{t: getattr(report, t) for t in (
        "tiles", "categories", "liveness", "code", "execution", "remote_buffers")}, variables=variables)
    facts = dict(report_document(written).facts)
    assert "are not-always-live from the step that writes them" in facts["liveness"]


def test_every_page_names_the_unattributed_row_alike() -> None:
    # the sample reports hold 4 B of role "other" without a parameter: "(no parameter)" with role
    # other everywhere a row has a role, in the text ledger as in the N-way index, and "(no
    # parameter)" for the same bytes summed over roles in the comparison's ledger by parameter
    for name in ("report text", "report markdown", "report html", "index html", "comparison text"):
        assert "(no parameter)" in OUTPUTS[name], name
    assert re.search(r"\(no parameter\)\s+other\s+always-live", OUTPUTS["index html"])
    assert "Streaming Memory" in OUTPUTS["index html"] and "not-always-live" in OUTPUTS["index html"]
    assert "always-live" in OUTPUTS["figure legends"] and "Streaming Memory" in OUTPUTS["figure legends"]
