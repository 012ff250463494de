"""What a `profcompare run` imports: the comparison's page draws its charts as BokehJS documents
written without Bokeh's Python package, so the run imports neither matplotlib nor Bokeh (a list
of modules, not a time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from runner_launch import HERE, subprocess_env


def test_a_run_and_its_four_outputs_import_no_matplotlib(tmp_path: Path) -> None:
    args = ["run", "fake-small", "fake-big", "--backend", "sim", "-q", "--out", str(tmp_path), "--name", "r",
            "--set", "size=2048"]
    code = (
        f"import json, sys; sys.path.insert(0, {str(HERE)!r}); import fake_workloads, workloads; "
        "workloads.list_workloads = lambda: [fake_workloads.WORKLOAD]; "
        f"from profcompare.cli import main; status = main({args!r}); "
        "print(json.dumps(sorted(m for m in sys.modules if m.partition('.')[0] in ('matplotlib', 'bokeh'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(),
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    run_dir = tmp_path / "r"
    page = (run_dir / "compare-fake-small-vs-fake-big.html").read_text()
    for name in ("compare-fake-small-vs-fake-big.md", "compare-fake-small-vs-fake-big.json", "index.html",
                 "index.json"):
        assert (run_dir / name).is_file()
    # ledger, categories, liveness, lifetimes, tiles, tile map, tile histogram, code, execution
    assert page.count('class="chart-data"') == 9
    assert [m for m in loaded if m.startswith("matplotlib")] == []
    # Bokeh's JavaScript and version are read from the installed package, never its models
    assert [m for m in loaded if m.startswith(("bokeh.models", "bokeh.plotting", "bokeh.embed"))] == []
    if not any(name.startswith("BOKEH_") for name in os.environ) and not (Path.home() / ".bokeh" / "bokeh.yaml").exists():
        assert loaded == []
