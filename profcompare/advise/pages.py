"""The report pages of an advise run: ``report.html`` (the page ``profcompare show --format html``
writes) in the directories of the first front points, written side by side.

Each page opens its point's report and renders it (matplotlib and Bokeh figures): about a
second of CPU a page, at the end of the search, when the points' workers are idle. With
``parallel`` > 1 the pages are written by that many processes forked from this one, after the
renderer's modules are imported here (so each process does not import them again); serially
when the process runs other threads (forking them is not safe), when fork is not available, or
for a single page. A page whose report cannot be read is left out, as before.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from profcompare.errors import ProfcompareError

#: the page's report section count: the same as ``profcompare show --format html`` gives
PAGE_TOP = 20

#: modules the HTML renderer imports when it draws (lazily): imported before forking; one left
#: out is imported by each page process itself (slower, not wrong)
_RENDER_MODULES = ("profcompare.render.html", "bokeh.embed", "bokeh.models", "bokeh.plotting", "bokeh.resources",
                   "matplotlib.backends.backend_agg", "matplotlib.backends.backend_svg")


def write_page(point_dir: Path) -> bool:
    """Write ``point_dir/report.html`` from the report there; False when the report cannot be read."""
    from profcompare.readers import open_report
    from profcompare.render.base import get_renderer
    from profcompare.render.output import write_output

    try:
        report = open_report(point_dir)
        write_output(get_renderer("html").render(report, top=PAGE_TOP), point_dir / "report.html")
    except ProfcompareError:
        return False
    return True


def can_fork() -> bool:
    """Whether page processes may be forked from this one: fork exists and no other thread runs."""
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def write_pages(point_dirs: Sequence[Path], parallel: int = 1) -> list[bool]:
    """:func:`write_page` for each of ``point_dirs`` (``parallel`` at a time, see the module
    docstring); one result each, in order."""
    workers = min(max(1, int(parallel)), len(point_dirs))
    if workers <= 1 or not can_fork():
        return [write_page(d) for d in point_dirs]
    for name in _RENDER_MODULES:
        importlib.import_module(name)
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(write_page, point_dirs))


def existing_page(point_dir: Path) -> bool:
    """A page is there already (linked in from the point cache: the same page)."""
    return os.path.lexists(point_dir / "report.html")


__all__ = ["PAGE_TOP", "can_fork", "existing_page", "write_page", "write_pages"]
