"""``profcompare tiles REPORT [NEW] [--tile N]`` as a user runs it: the sentence, the formats,
-o/--force, and one-line errors with a non-zero exit for bad input."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
from cli_sample_reports import build_report

from profcompare.model import make_frame
from profcompare.readers.store import write_report

#: ``run_cli(*args)`` -> the Outcome of tests/cli/conftest.py (exit_code, stdout, stderr)
Run = Callable[..., Any]

ONCHIP_WHY = "tile 0 is the fullest: 103.3 KiB, 6.7x the median tile (15.4 KiB);"


@pytest.fixture
def paths(report_dir: pathlib.Path) -> tuple[str, str]:
    return str(report_dir / "onchip"), str(report_dir / "offchip-sharded")


def test_one_report(run_cli: Run, paths: tuple[str, str]) -> None:
    out = run_cli("tiles", paths[0])
    assert out.exit_code == 0, out.stderr
    assert "Tile detail" in out.stdout and ONCHIP_WHY in out.stdout
    assert "Bytes (incl. gaps)" in out.stdout and "103.3 KiB" in out.stdout


def test_two_reports_side_by_side(run_cli: Run, paths: tuple[str, str]) -> None:
    out = run_cli("tiles", *paths)
    assert out.exit_code == 0, out.stderr
    assert f"base: {ONCHIP_WHY}" in out.stdout
    assert "0 (fullest in base, fullest in new)" in out.stdout and "1 (largest change)" in out.stdout
    assert "No tile crossed the 624.0 KiB budget." in out.stdout


def test_a_tile_asked_for(run_cli: Run, paths: tuple[str, str]) -> None:
    out = run_cli("tiles", paths[0], "--tile", "3", "--format", "markdown")
    assert out.exit_code == 0, out.stderr
    assert "- tile 3: 15.4 KiB, 2.5% of the budget, 1.0x the median tile (15.4 KiB)." in out.stdout
    assert "| Figure | Tile 3 |" in out.stdout


def test_json(run_cli: Run, paths: tuple[str, str]) -> None:
    out = run_cli("tiles", *paths, "--format", "json")
    assert out.exit_code == 0, out.stderr
    data = json.loads(out.stdout)
    assert [(t["tile"], t["reasons"]) for t in data["tiles"]] == [(0, ["fullest in base", "fullest in new"]),
                                                                  (1, ["largest change"])]
    assert data["tiles"][0]["base"]["bytes"] == 105_739 and data["tiles"][0]["new"]["bytes"] == 54_280
    assert data["tiles"][0]["base"]["regions"] == {"non_interleaved": None, "interleaved": None, "overflow": None,
                                                   "gap": 96}
    assert data["why_fullest"]["base"].startswith(ONCHIP_WHY)
    assert data["crossed_budget"] == []
    assert sum(b["base_tiles"] for b in data["histogram"]) == 1472


def test_output_file_and_force(run_cli: Run, paths: tuple[str, str], tmp_path: pathlib.Path) -> None:
    target = tmp_path / "tiles.md"
    assert run_cli("tiles", paths[0], "--format", "markdown", "-o", str(target)).exit_code == 0
    assert "### Tile detail" in target.read_text(encoding="utf-8")
    again = run_cli("tiles", paths[0], "-o", str(target))
    assert again.exit_code != 0 and "exists" in again.stderr
    assert run_cli("tiles", paths[0], "-o", str(target), "--force").exit_code == 0


@pytest.mark.parametrize("args", [("--tile", "1472"), ("--tile", "5000")])
def test_a_tile_out_of_range_is_one_line(run_cli: Run, paths: tuple[str, str],
                                         args: tuple[str, ...]) -> None:
    out = run_cli("tiles", paths[0], *args)
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr == f"profcompare: error: tile {args[1]} is not in onchip: its tiles are 0 to 1471\n"


def test_a_report_without_tiles_is_one_line(run_cli: Run, tmp_path: pathlib.Path) -> None:
    bare = build_report("onchip")
    bare = type(bare).build(bare.meta.replace(capabilities=bare.meta.capabilities - {"tiles"}),
                            tiles=make_frame("tiles"), variables=bare.variables, liveness=bare.liveness)
    path = write_report(bare, tmp_path / "profile.sqlite")
    out = run_cli("tiles", str(path))
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr == "profcompare: error: onchip records no per-tile memory\n"
    (tmp_path / "again").mkdir()
    other = write_report(bare, tmp_path / "again" / "profile.sqlite")
    both = run_cli("tiles", str(path), str(other))
    assert both.exit_code == 2 and both.stderr == "profcompare: error: neither report records per-tile memory\n"


def test_a_negative_tile_is_a_usage_error(run_cli: Run, paths: tuple[str, str]) -> None:
    out = run_cli("tiles", paths[0], "--tile", "-1")
    assert out.exit_code == 2 and "--tile" in out.stderr
