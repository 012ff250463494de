"""``profcompare ops REPORT [NEW]``: the operations of one report, or of two paired, in every
format; bad input is a one-line error."""

from __future__ import annotations

import csv
import io
import json
import pathlib
from collections.abc import Callable

import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.synthetic import ProgramBuilder
from profcompare.emulator.targets import MK2
from profcompare.readers.store import write_report

Run = Callable[..., object]
TINY = MK2.replace(tiles_per_ipu=4)


def _program(shape: tuple[int, int], add: bool):
    """host_load x; gelu (and, with ``add``, y + y); host_store."""
    b = ProgramBuilder()
    (x,) = b.op("HostLoad", [], [("x", shape, "float32")], attrs={"stream": "x"}, name="load_x")
    (y,) = b.op("Gelu", [x], [("y", shape, "float32")], flops=shape[0] * shape[1] * 6, name="gelu")
    if add:
        (y,) = b.op("Add", [y, y], [("z", shape, "float32")], flops=shape[0] * shape[1], name="add")
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    return b.build()


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("ops")
    base, new = root / "base.sqlite", root / "new.sqlite"
    write_report(compile_program(_program((8, 64), False), TINY).with_execution(1), base)
    write_report(compile_program(_program((64, 64), True), TINY).with_execution(1), new)
    return str(base), str(new)


def _one_line_error(outcome: object, pattern: str) -> None:
    import re

    lines = outcome.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert outcome.exit_code == 2 and outcome.exception is None  # type: ignore[attr-defined]
    assert len(lines) == 1 and lines[0].startswith("profcompare: error: "), lines
    assert re.search(pattern, lines[0]), lines[0]


def test_ops_of_one_report_as_text(run_cli: Run, stores: tuple[str, str]) -> None:
    out = run_cli("ops", stores[0], "--top", "2")
    assert out.exit_code == 0, out.stderr  # type: ignore[attr-defined]
    text = out.stdout  # type: ignore[attr-defined]
    lines = [line.rstrip() for line in text.splitlines()]
    start = lines.index("Operations")
    assert lines[start + 2].split() == ["Op", "Type", "Code", "bytes", "Vertex", "state", "Exchange", "code", "Cycles",
                                        "FLOPs", "Tiles"]
    rows = [line.split() for line in lines[start + 4:start + 8]]
    assert rows == [
        # the program Switch's control broadcast (94 sync + 128 exchange cycles) is no op's: 467,868 + 222 = 468,090
        ["(not", "attributed", "to", "an", "op)", "3.1", "KiB", "0", "B", "0", "B", "468,090", "n/a", "n/a"],
        ["load_x", "HostLoad", "672", "B", "0", "B", "384", "B", "20,896", "0", "4"],
        ["other", "(2", "ops)", "768", "B", "384", "B", "384", "B", "21,616"],
        # the totals are the report's code bytes (vertex code 1,280 + control 2,528 + host exchange 768)
        # and device cycles per step (468,090 + 20,896 + 21,616 = 510,602)
        ["total", "4.5", "KiB", "384", "B", "768", "B", "510,602"],
    ]
    assert "Top 2 of 4 ops shown; 2 more in the 'other' row." in text


def test_ops_of_two_reports_as_json_and_csv(run_cli: Run, stores: tuple[str, str]) -> None:
    out = run_cli("ops", *stores, "--format", "json")
    assert out.exit_code == 0, out.stderr  # type: ignore[attr-defined]
    data = json.loads(out.stdout)  # type: ignore[attr-defined]
    assert (data["view"], data["shown"], data["total"], data["cut"]) == ("operations", 5, 5, 0)
    by_name = {r["name"]: r for r in data["operations"]}
    assert by_name["add"] == {"name": "add", "type": "Add", "base_code_bytes": 0, "new_code_bytes": 96,
                              "delta_code_bytes": 96, "base_cycles": 0, "new_cycles": 848, "delta_cycles": 848,
                              "status": "added"}
    assert by_name["gelu"]["base_cycles"] == 720 and by_name["gelu"]["status"] == "grew"
    table = list(csv.DictReader(io.StringIO(run_cli("ops", *stores, "--format", "csv").stdout)))  # type: ignore[attr-defined]
    assert [r["name"] for r in table] == [r["name"] for r in data["operations"]]
    assert table[1] == {k: str(v) for k, v in by_name["add"].items()}


def test_ops_of_two_reports_as_markdown(run_cli: Run, stores: tuple[str, str]) -> None:
    text = run_cli("ops", *stores, "--format", "markdown").stdout  # type: ignore[attr-defined]
    assert "### Operations" in text
    assert ("| Op | Type | Base code | New code | Delta code | Base cycles | New cycles | Delta cycles | Status |"
            in text)
    assert "| add | Add | 0 B | 96 B | **+96 B** | 0 | 848 | **+848** | **added** |" in text


def test_ops_writes_a_file_once(run_cli: Run, stores: tuple[str, str], tmp_path: pathlib.Path) -> None:
    target = tmp_path / "ops.csv"
    assert run_cli("ops", stores[0], "--format", "csv", "-o", str(target)).exit_code == 0  # type: ignore[attr-defined]
    assert target.read_text().splitlines()[0] == ("name,debug_name,type,layer,ipu,code_bytes,vertex_state_bytes,"
                                                  "exchange_code_bytes,cycles,flops,tiles,source,parameter,role")
    _one_line_error(run_cli("ops", stores[0], "--format", "csv", "-o", str(target)), r"ops.csv exists; use --force to overwrite")
    assert run_cli("ops", stores[0], "--format", "csv", "-o", str(target), "--force").exit_code == 0  # type: ignore[attr-defined]


def test_bad_input_is_a_one_line_error(run_cli: Run, stores: tuple[str, str], tmp_path: pathlib.Path) -> None:
    _one_line_error(run_cli("ops", str(tmp_path / "nope")), r"nope: no such file or directory")
    _one_line_error(run_cli("ops", stores[0], str(tmp_path / "gone")), r"gone: no such file or directory")
    out = run_cli("ops", stores[0], "--format", "html")
    assert out.exit_code == 2  # type: ignore[attr-defined]


def test_the_command_offers_the_formats_the_renderer_draws() -> None:
    from profcompare.commands import ops
    from profcompare.render import operations_out

    assert ops.OPERATIONS_FORMATS == operations_out.OPERATIONS_FORMATS


def test_ops_vertices_of_one_report_as_text(run_cli: Run, stores: tuple[str, str]) -> None:
    out = run_cli("ops", stores[0], "--vertices")
    assert out.exit_code == 0, out.stderr  # type: ignore[attr-defined]
    lines = [line.rstrip() for line in out.stdout.splitlines()]  # type: ignore[attr-defined]
    assert lines[0].startswith("profcompare ops --vertices: ")
    start = lines.index("Vertices, compute sets and exchanges")
    assert lines[start + 2].split() == ["Vertex", "type", "Code", "bytes", "Vertex", "state", "Instances", "Tiles",
                                        "Compute", "sets"]
    # gelu on 8 x 64 float32 over 4 tiles: 6 vertices of 16 B a tile, the nonlinearity codelet 320 B a tile
    assert lines[start + 4].split() == ["codelets:nonlinearity", "1.2", "KiB", "384", "B", "24", "4", "1"]
    assert "gelu          gelu          384 B         24      626       4" in out.stdout  # type: ignore[attr-defined]


def test_ops_vertices_of_two_reports_as_json(run_cli: Run, stores: tuple[str, str]) -> None:
    out = run_cli("ops", *stores, "--vertices", "--format", "json")
    assert out.exit_code == 0, out.stderr  # type: ignore[attr-defined]
    data = json.loads(out.stdout)  # type: ignore[attr-defined]
    assert data["view"] == "vertices" and set(data["reports"]) == {"base", "new"}
    by_name = {r["name"]: r for r in data["vertices"]}
    # the new program adds an Add (the elementwise codelet, 144 B on each of the 4 tiles); its
    # larger gelu still has 6 vertices a tile (the state is unchanged) but takes 2,688 cycles more
    assert by_name["codelets:elementwise"]["status"] == "added" and by_name["codelets:elementwise"]["new_code_bytes"] == 576
    assert by_name["codelets:nonlinearity"]["status"] == "unchanged"
    assert [(r["name"], r["delta_cycles"], r["status"]) for r in data["compute_sets"]] == [
        ("add", 754, "added"), ("gelu", 2688, "grew")]
    assert data["total"] == {"vertices": 2, "compute_sets": 2, "exchanges": 2}


def test_ops_vertices_refuses_csv(run_cli: Run, stores: tuple[str, str]) -> None:
    _one_line_error(run_cli("ops", stores[0], "--vertices", "--format", "csv"), r"--vertices writes three tables")
