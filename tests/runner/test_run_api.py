"""profcompare.run(): the run command for notebooks, without importing the runner."""

from __future__ import annotations

from pathlib import Path

import pytest

import profcompare as pc
from profcompare.errors import WorkloadError


def test_run_returns_reports_comparisons_and_a_table(fake_registry: object, tmp_path: Path) -> None:
    run = pc.run(["fake-small", "fake-big"], backend="sim", out=tmp_path, name="r", size=2048)
    assert run.variants == ("fake-small", "fake-big") and run.directory == tmp_path / "r"
    assert set(run.reports) == {"fake-small", "fake-big"}
    diff = run.compare()
    assert diff.base.label == "fake-small" and diff.new.label == "fake-big"
    assert diff.summary.loc["streaming_memory_bytes", "new"] == 4096
    table = run.table()
    assert list(table.columns) == ["fake-small", "fake-big"]
    assert table.loc["streaming_memory_bytes", "fake-big"] == 4096
    assert "fake-small ok" in repr(run)


def test_run_refuses_bad_knobs_up_front(fake_registry: object, tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="unknown knob"):
        pc.run("fake-small", backend="sim", out=tmp_path, nonsense=1)
    assert list(tmp_path.iterdir()) == []
