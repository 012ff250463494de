"""tools/llm_programs.py: runs LLM applications' entry points at every configuration of their
config files under ``profcompare profile --compile-only``. Checked on a small application of our
own laid out as Graphcore's are (APP/popxl with config/*.yml and entry points reading them)."""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CONFIG = """\
tiny: &tiny
  size: 64
release:
  small:
    <<: *tiny
  wide:
    size: 4096
  broken:
    size: -1
  slow:
    size: 0
other:
  unused:
    size: 1
"""

TRAIN = textwrap.dedent(
    '''
    import sys, time
    from pathlib import Path

    import numpy as np
    import yaml
    import popxl
    from popxl import ops

    CONFIG_DIR = Path(__file__).parent / "config"


    def setup(path, key, default):
        name = sys.argv[sys.argv.index("--config") + 1] if "--config" in sys.argv else default
        return yaml.safe_load(path.read_text())[key][name]


    def main():
        config = setup(CONFIG_DIR / "train.yml",
                       "release", "small")
        if config["size"] < 0:
            raise ValueError("size must be positive")
        ir = popxl.Ir()
        with ir.main_graph:
            w = popxl.variable(np.ones((max(config["size"], 1), 64), np.float32), name="w")
            s = popxl.d2h_stream((64,), popxl.float32, "y")
            ops.host_store(s, ops.sum(w, 0))
        with popxl.Session(ir, "ipu_hw") as session:
            session.run()
        if config["size"] == 0:
            time.sleep(300)


    if __name__ == "__main__":
        main()
    '''
)


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("llm_programs", ROOT / "tools" / "llm_programs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["llm_programs"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def apps(tmp_path: Path) -> Path:
    app = tmp_path / "nlp" / "fake_lm" / "popxl"
    (app / "config").mkdir(parents=True)
    (app / "config" / "train.yml").write_text(CONFIG)
    (app / "train.py").write_text(TRAIN)
    # left out: a run_* script (reads data sets) and a module without a main
    (app / "run_train.py").write_text(TRAIN)
    (app / "model.py").write_text("X = 'train.yml', 'release'\n")
    (tmp_path / "nlp" / "not_an_app").mkdir()
    return tmp_path / "nlp"


def test_plan_finds_every_configuration_of_each_entry_point(tool, apps: Path) -> None:
    runs = tool.plan(apps)
    assert [(r.app, r.script, r.config) for r in runs] == [
        ("fake_lm", "train.py", c) for c in ("small", "wide", "broken", "slow")]
    assert runs[0].cwd == apps / "fake_lm" / "popxl"
    assert tool.plan(apps, ["other_app"]) == []


def test_plan_reads_configs_directories_and_leaves_out_checkpoint_scripts(tool, tmp_path: Path) -> None:
    # an application with ``configs/``; ``run-*`` scripts and one that builds no Session (it
    # converts a checkpoint) are no entry points
    app = tmp_path / "multimodal" / "fake_vlm" / "popxl"
    (app / "configs").mkdir(parents=True)
    (app / "configs" / "train.yml").write_text(CONFIG)
    (app / "infer.py").write_text(TRAIN.replace('/ "config"', '/ "configs"'))
    (app / "run-infer.py").write_text(TRAIN)
    (app / "convert.py").write_text(TRAIN.replace("popxl.Session", "popxl.Ir"))
    assert [(r.app, r.script, r.config) for r in tool.plan(tmp_path / "multimodal")] == [
        ("fake_vlm", "infer.py", c) for c in ("small", "wide", "broken", "slow")]


def test_table_of_compile_only_runs(tool, apps: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs"
    # this process made large first: a run's peak RSS must be its own, not its starter's high-water
    # mark (which Linux carries into a program a process execs)
    ballast = b"\x01" * (1024 * 2**20)
    assert tool.main([str(apps), "--timeout", "40", "--out", str(out)]) == 0
    del ballast
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()[2:]]
    by_config = {row[2]: row for row in rows}
    assert list(by_config) == ["small", "wide", "broken", "slow"]
    assert by_config["small"][3] == "ok" and by_config["small"][4] == "1"
    assert by_config["wide"][3] == "ok"
    assert by_config["broken"][3] == "failed" and "ValueError: size must be positive" in by_config["broken"][10]
    # stopped by the timeout after its Session had reported: kept, incomplete
    assert by_config["slow"][3] == "incomplete" and by_config["slow"][4] == "1"
    assert "timed out after 40 s" in by_config["slow"][10]
    # compile-only, and the fullest tile is the report's own figure
    import json

    import profcompare

    job = out / "fake_lm-train-wide" / "train"
    assert json.loads((job / "run.json").read_text())["execution"] == "compile-only"
    report = profcompare.open_report(job)
    expected = 100 * float(report.summary()["max_tile_bytes"]) / report.meta.target.bytes_per_tile
    assert by_config["wide"][5] == f"{expected:.0f}%" and by_config["wide"][6] == "0"
    assert all(0 < float(row[9]) < 800 for row in rows)  # peak RSS of each run, its own
    assert all(0 < float(row[8]) <= float(row[7]) * (os.cpu_count() or 1) for row in rows)  # CPU seconds


def test_bad_root_is_one_line(tool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        tool.main([str(tmp_path / "missing")])
    assert exc.value.code == 2
    assert "not a directory" in capsys.readouterr().err
