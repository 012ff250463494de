"""The notebook surface of Report and Comparison (``_repr_html_``, ``plot_*``, the REPL repr) is the
render layer's, registered through profcompare.base.presenters: the objects never import it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from profcompare.base import presenters
from profcompare.comparison import Comparison, compare
from profcompare.errors import ProfcompareError
from profcompare.model import Report
from profcompare.readers.store import write_report
from profcompare.render import notebook, plots

ROOT = Path(__file__).resolve().parents[2]

#: The documented notebook methods (README "A quick tour", "The memory ledger"; DESIGN 1 and 6).
REPORT_METHODS = ("_repr_html_", "plot_memory_by_category", "plot_liveness", "plot_tiles", "plot_trace")
COMPARISON_METHODS = ("_repr_html_", "__repr__", "plot_ledger", "plot_lifetimes", "plot_liveness", "plot_memory_by_category", "plot_tiles",
                      "plot_trace")


def test_every_method_has_one_render_implementation() -> None:
    from profcompare.advisor.advisor import AdviseResult

    assert presenters.METHODS == {"Report": REPORT_METHODS, "Comparison": COMPARISON_METHODS,
                                  "AdviseResult": ("_repr_html_",)}
    assert sorted(notebook.PRESENTERS) == sorted(presenters.names())
    for owner, cls in (("Report", Report), ("Comparison", Comparison), ("AdviseResult", AdviseResult)):
        for method in presenters.METHODS[owner]:
            assert method in vars(cls)  # the class itself defines it (not object's default)


def _svg(figure: Figure) -> str:
    return plots.figure_to_svg(figure, id_salt="t")


def test_report_methods_draw_what_the_render_layer_draws(onchip: Report) -> None:
    assert onchip._repr_html_() == notebook.report_repr_html(onchip)
    assert _svg(onchip.plot_liveness()) == _svg(plots.plot_liveness([onchip]))
    assert _svg(onchip.plot_tiles()) == _svg(plots.plot_tiles([onchip]))
    assert _svg(onchip.plot_memory_by_category()) == _svg(plots.plot_categories([onchip]))


def test_comparison_methods_draw_what_the_render_layer_draws(onchip: Report, offchip: Report) -> None:
    diff = compare(onchip, offchip)
    assert diff._repr_html_() == notebook.comparison_repr_html(diff)
    assert _svg(diff.plot_liveness()) == _svg(plots.plot_liveness([onchip, offchip], aligned=diff.liveness))
    assert _svg(diff.plot_tiles()) == _svg(plots.plot_tiles([onchip, offchip]))
    assert _svg(diff.plot_memory_by_category()) == _svg(plots.plot_categories([onchip, offchip]))
    assert _svg(diff.plot_ledger()) == _svg(plots.plot_ledger(diff))
    text = repr(diff)
    assert text.splitlines()[0] == ("<Comparison base='onchip' (simulated) new='offchip-sharded' (simulated); "
                                    "delta = new - base, noise 64 B or 1%>")
    assert text.splitlines()[-1].startswith("  tables: ledger (")


def test_a_method_without_implementation_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch, onchip: Report) -> None:
    monkeypatch.setattr(presenters, "_IMPLEMENTATIONS", {})
    monkeypatch.setattr(presenters, "_LOADERS", [])
    with pytest.raises(ProfcompareError, match=r"^Report.plot_tiles is not available: the render layer has not registered it"):
        onchip.plot_tiles()
    with pytest.raises(ProfcompareError, match=r"no presenter method 'Report.plot_everything'"):
        presenters.register("Report.plot_everything", print)


def test_a_loader_runs_once_and_only_when_needed(monkeypatch: pytest.MonkeyPatch, onchip: Report) -> None:
    monkeypatch.setattr(presenters, "_IMPLEMENTATIONS", {})
    calls: list[str] = []

    def loader() -> None:
        calls.append("loaded")
        notebook.register_presenters()

    monkeypatch.setattr(presenters, "_LOADERS", [loader])
    assert calls == []
    assert onchip._repr_html_() == notebook.report_repr_html(onchip)
    assert isinstance(onchip.plot_tiles(), Figure)
    assert calls == ["loaded"] and presenters._LOADERS == []


def test_a_fresh_interpreter_gets_the_methods_without_importing_the_renderers_first(
        tmp_path: Path, onchip: Report, offchip: Report) -> None:
    write_report(onchip, tmp_path / "base.sqlite")
    write_report(offchip, tmp_path / "new.sqlite")
    script = textwrap.dedent(f"""
        import sys
        from profcompare.readers import open_report
        from profcompare.comparison import Comparison, compare
        base = open_report({str(tmp_path / 'base.sqlite')!r})
        diff = compare(base, open_report({str(tmp_path / 'new.sqlite')!r}))
        loaded = sorted(m for m in sys.modules if m.startswith("profcompare.render"))
        assert loaded == [], loaded
        html = base._repr_html_()
        figures = [base.plot_liveness(), base.plot_tiles(), base.plot_memory_by_category(),
                   diff.plot_liveness(), diff.plot_tiles(), diff.plot_memory_by_category(), diff.plot_ledger()]
        from matplotlib.figure import Figure
        assert all(isinstance(f, Figure) for f in figures)
        assert "SIMULATED" in html and "SIMULATED" in diff._repr_html_()
        print(repr(diff).splitlines()[0])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("<Comparison base='onchip' (simulated) new='offchip-sharded' (simulated); "
                                   "delta = new - base, noise 64 B or 1%>")
