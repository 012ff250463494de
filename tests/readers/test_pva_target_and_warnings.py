"""The pva reader's target without ``ipusPerReplica`` (older libpva) and where its warnings point."""

from __future__ import annotations

import linecache
import pathlib
import warnings
from types import SimpleNamespace as NS

import pytest
from fake_pva import FakePva, build_report_tree

from profcompare.errors import ProfileWarning
from profcompare.readers.pva import read_pva, report_from_pva


@pytest.fixture
def profile(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "profile.pop"
    path.write_bytes(b"SQLite format 3\x00 stand-in")
    return path


@pytest.mark.parametrize(("num_ipus", "replicas", "per_replica"), [(4, 2, 2), (4, 4, 1), (8, 2, 4), (2, 1, 2)])
def test_ipus_per_replica_without_the_attribute_is_ipus_over_replicas(profile, num_ipus, replicas, per_replica):
    tree = build_report_tree()
    target = tree.compilation.target
    del target.ipusPerReplica
    target.numIPUs, target.numReplicas = num_ipus, replicas
    report = read_pva(profile, pva_module=FakePva(tree))
    t = report.meta.target
    assert (t.num_ipus, t.num_replicas, t.ipus_per_replica) == (num_ipus, replicas, per_replica)
    assert type(t.ipus_per_replica) is int
    assert t.tiles_per_replica == per_replica * 2  # the fake target has 2 tiles per IPU


def _warning_line(tree) -> tuple[str, str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report_from_pva(tree, source="profile.pop")
    (w,) = [c for c in caught if issubclass(c.category, ProfileWarning)]
    return pathlib.Path(w.filename).name, linecache.getline(w.filename, w.lineno)


def test_a_warning_points_at_the_part_of_the_report_being_read():
    tree = build_report_tree()
    tree.compilation.target.clockFrequency = 0.0
    name, line = _warning_line(tree)
    # the line of report_from_pva that reads the target, not the helper that warns
    assert name == "pva.py" and "target = _target(compilation.target)" in line

    class Exploding:
        def __iter__(self):  # type: ignore[no-untyped-def]
            raise RuntimeError("Unable to read execution step 17")

    tree = build_report_tree()
    tree.execution.runs = Exploding()
    name, line = _warning_line(tree)
    assert name == "pva.py" and '_guarded("execution profile"' in line


def test_code_progress_is_reported_from_the_first_program(profile):
    seen: list[tuple[str, int, int]] = []
    read_pva(profile, pva_module=FakePva(), progress=lambda *a: seen.append(a))
    # the fake has 4 programs: the walk reports its start (every 256 programs) and its end
    assert [s for s in seen if s[0] == "code"] == [("code", 0, 4), ("code", 4, 4)]


def test_an_execution_step_without_ipus_takes_its_slowest_tile(profile):
    tree = build_report_tree(with_execution=True)
    fwd = tree.execution.runs[1].steps[0].program
    tree.execution.runs = [NS(name="run0", steps=[NS(program=fwd, cyclesByTile=[10, 30, 20]),
                                                  NS(program=fwd, cyclesByTile=[]), NS(program=fwd)])]
    tree.execution.totalCycles = NS(total=30)
    ex = read_pva(profile, pva_module=FakePva(tree)).execution
    # an older profile: cycles per tile and no per-IPU intervals
    assert ex["cycles"].tolist() == [30, 0, 0]
    assert ex["cycles_from"].isna().all() and ex["cycles_to"].isna().all()
