"""The runner returns outcomes and never renders: a run's pages are written by the writers its
caller hands it (the command line's :func:`profcompare.commands.pages.run_pages`), into the
staging directory, so they are published with the run."""

from __future__ import annotations

from pathlib import Path

from profcompare import runner
from profcompare.commands.pages import run_pages

VARIANTS = ["fake-small", "fake-big"]
PAGES = {"compare-fake-small-vs-fake-big.html", "compare-fake-small-vs-fake-big.md",
         "compare-fake-small-vs-fake-big.json", "index.html", "index.json"}


def _names(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


def test_a_run_without_pages_compares_and_tabulates_but_writes_no_page(fake_registry: object, tmp_path: Path) -> None:
    result = runner.run_variants(VARIANTS, out=tmp_path, name="bare", backend="sim")
    assert _names(tmp_path / "bare") & PAGES == set()
    assert result.files == {}
    (outcome,) = result.comparisons
    assert outcome.comparison is not None and outcome.error is None and dict(outcome.files) == {}
    assert list(result.nway.labels) == VARIANTS


def test_the_command_lines_pages_are_published_with_the_run(fake_registry: object, tmp_path: Path) -> None:
    bare = runner.run_variants(VARIANTS, out=tmp_path, name="bare", backend="sim")
    paged = runner.run_variants(VARIANTS, out=tmp_path, name="paged", backend="sim", pages=run_pages(5))
    assert _names(paged.directory) - _names(bare.directory) == PAGES
    assert paged.files == {"index html": paged.directory / "index.html", "index json": paged.directory / "index.json"}
    (outcome,) = paged.comparisons
    stem = paged.directory / "compare-fake-small-vs-fake-big"
    assert dict(outcome.files) == {"html": stem.with_suffix(".html"), "markdown": stem.with_suffix(".md"),
                                   "json": stem.with_suffix(".json")}
    assert 'href="compare-fake-small-vs-fake-big.html"' in (paged.directory / "index.html").read_text()
