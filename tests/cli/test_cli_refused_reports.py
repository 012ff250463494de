"""Stores whose checksums match but whose content a report cannot hold are refused when read:
text columns holding a missing value or bytes, flags that are not true/false, a target lacking a
field. ``open_report`` raises ReportFormatError (for meta at once, for a table when the table is
first used) and ``show`` / ``compare`` exit with 2 and one line
(before, such a store opened and ``compare`` died with an internal error, or a ``null`` flag read
as false and dropped the SIMULATED banner)."""

from __future__ import annotations

import json
import pathlib
import re
import sqlite3
from typing import Any

import pytest
from store_edits import edited_store

from profcompare.errors import ReportFormatError
from profcompare.model import TABLES
from profcompare.readers import open_report

#: Exit code of a report that cannot be read (ProfcompareError.exit_code; cli.USAGE_ERROR).
BAD_INPUT = 2

def _bytes_category(table: str, column: str) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """The first category of ``table.column`` stored as bytes, its categories read as objects (as a
    store written with object categories is: str categories would decode the bytes)."""
    return (("UPDATE dictionary SET value = CAST(value AS BLOB) WHERE table_name = ? AND column_name = ? AND code = 0",
             (table, column)),
            ("UPDATE columns SET categories_dtype = 'object' WHERE table_name = ? AND column_name = ?", (table, column)))


def _sql(statement: str, *parameters: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    return ((statement, parameters),)


TEXT_EDITS = [
    pytest.param(_sql("UPDATE variables SET name = NULL WHERE rowid = 2"), "variables.name: row 1 is missing, not text",
                 id="variables.name-null"),
    pytest.param(_sql("UPDATE variables SET name = ? WHERE rowid = 1", b"\x00\xff"), "variables.name: row 0 is bytes, not text",
                 id="variables.name-bytes"),
    pytest.param(_sql("UPDATE variables SET kind = NULL WHERE rowid = 3"), "variables.kind: row 2 is missing, not text",
                 id="variables.kind-null"),
    pytest.param(_bytes_category("variables", "dtype"), "variables.dtype: a category is bytes, not text",
                 id="variables.dtype-bytes"),
    pytest.param(_sql("UPDATE variables SET parameter = NULL WHERE rowid = 1"), "variables.parameter: row 0 is missing, not text",
                 id="variables.parameter-null"),
    pytest.param(_bytes_category("variables", "role"), "variables.role: a category is bytes, not text",
                 id="variables.role-bytes"),
    pytest.param(_sql("UPDATE dictionary SET value = CAST(value AS BLOB) WHERE table_name = 'liveness' AND column_name = 'program' AND code = 0"),
                 "liveness.program: row 0 is bytes, not text", id="liveness.program-bytes"),
    pytest.param(_sql("UPDATE liveness SET program = NULL WHERE rowid = 5"), "liveness.program: row 4 is missing, not text",
                 id="liveness.program-null"),
    pytest.param(_sql("UPDATE code SET name = NULL WHERE rowid = 4"), "code.name: row 3 is missing, not text",
                 id="code.name-null"),
    pytest.param(_sql("UPDATE categories SET category = CAST(category AS BLOB) WHERE rowid = 1"),
                 "categories.category: row 0 is bytes, not text", id="categories.category-bytes"),
    pytest.param(_sql("UPDATE execution SET phase = NULL WHERE rowid = 2"), "execution.phase: row 1 is missing, not text",
                 id="execution.phase-null"),
]


def _meta_edit(key: str, value: str) -> tuple[str, tuple[Any, ...]]:
    return "UPDATE meta SET value = ? WHERE key = ?", (value, key)


def _target_without(source: str, field: str) -> tuple[str, tuple[Any, ...]]:
    con = sqlite3.connect(source)
    target = json.loads(con.execute("SELECT value FROM meta WHERE key = 'target'").fetchone()[0])
    con.close()
    del target[field]
    return _meta_edit("target", json.dumps(target))


def _one_line(outcome: Any, expected: str) -> None:
    assert outcome.exception is None, outcome.exception  # no traceback
    assert outcome.exit_code == BAD_INPUT, (outcome.exit_code, outcome.stderr)
    lines = outcome.stderr.strip().splitlines()
    assert lines == [f"profcompare: error: {expected}"], outcome.stderr


def _refused_everywhere(run_cli: Any, bad: pathlib.Path, good: str, expected: str) -> None:
    with pytest.raises(ReportFormatError) as raised:
        report = open_report(bad)
        for table in TABLES:  # each table is read, and checked, when first used
            getattr(report, table)
    assert str(raised.value) == expected
    _one_line(run_cli("show", str(bad)), expected)
    _one_line(run_cli("compare", good, str(bad)), expected)
    _one_line(run_cli("compare", str(bad), good, "--format", "json"), expected)


@pytest.mark.parametrize(("statements", "problem"), TEXT_EDITS)
def test_text_columns_holding_missing_values_or_bytes_are_refused(
        run_cli: Any, onchip_path: str, tmp_path: pathlib.Path, statements: Any, problem: str) -> None:
    bad = edited_store(onchip_path, tmp_path / "profile.sqlite", *statements)
    _refused_everywhere(run_cli, bad, onchip_path, f"{bad}: invalid report content: {problem}")


@pytest.mark.parametrize(
    ("key", "stored", "shown"),
    [("simulated", "null", "null"), ("simulated", "1", "1"), ("simulated", '"true"', "a string"),
     ("oom", '"false"', "a string"), ("oom", "0", "0"), ("oom", "null", "null"), ("oom", "[]", "a list")],
)
def test_flags_must_be_true_or_false(run_cli: Any, onchip_path: str, tmp_path: pathlib.Path,
                                     key: str, stored: str, shown: str) -> None:
    bad = edited_store(onchip_path, tmp_path / "profile.sqlite", _meta_edit(key, stored))
    _refused_everywhere(run_cli, bad, onchip_path, f"{bad}: corrupt report (meta.{key} is {shown}, expected true or false)")


@pytest.mark.parametrize(
    "field", ["architecture", "num_ipus", "tiles_per_ipu", "bytes_per_tile", "clock_hz", "num_replicas", "ipus_per_replica"])
def test_every_target_field_is_required(run_cli: Any, onchip_path: str, tmp_path: pathlib.Path, field: str) -> None:
    # every field has been stored since schema version 1 (docs/report-format.md): none may default
    bad = edited_store(onchip_path, tmp_path / "profile.sqlite", _target_without(onchip_path, field))
    _refused_everywhere(run_cli, bad, onchip_path, f"{bad}: corrupt report (meta.target lacks {field})")


def test_an_untouched_resealed_store_still_opens(onchip_path: str, tmp_path: pathlib.Path) -> None:
    # the resealing itself changes nothing: the refusals above come from the edits
    same = edited_store(onchip_path, tmp_path / "profile.sqlite")
    assert open_report(same).summary().equals(open_report(onchip_path).summary())


def test_a_path_the_file_system_refuses_is_a_report_format_error(run_cli: Any, tmp_path: pathlib.Path) -> None:
    too_long = tmp_path / ("n" * 256) / "profile.sqlite"  # one component over NAME_MAX (255 bytes)
    with pytest.raises(ReportFormatError) as raised:
        open_report(too_long)
    assert re.fullmatch(rf"{re.escape(str(too_long))}: cannot open: File name too long", str(raised.value))
    _one_line(run_cli("show", str(too_long)), f"{too_long}: cannot open: File name too long")
