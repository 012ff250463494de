"""Binary output to standard output: written unchanged after any text, through click's own stream
handling (no deprecated click API: click 8.5 warns on ``get_binary_stream``)."""

from __future__ import annotations

import subprocess
import sys
import warnings

import click
from click.testing import CliRunner

from profcompare.commands._common import emit

PAYLOAD = b"\x00\x01SQLite\xff\r\n"


@click.command()
def _write() -> None:
    click.echo("text first")
    emit(PAYLOAD, None, force=False)
    emit(PAYLOAD, "-", force=False)


def test_bytes_follow_text_unchanged_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = CliRunner().invoke(_write)
    assert result.exception is None, result.exception
    assert result.stdout_bytes == b"text first\n" + PAYLOAD + PAYLOAD


def test_bytes_reach_a_real_pipe_unchanged() -> None:
    code = "from profcompare.commands._common import emit; emit(%r, None, force=False)" % PAYLOAD
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout == PAYLOAD


def test_a_text_in_parts_is_written_whole_to_standard_output_and_to_a_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    parts = ["{\n", "x" * (1 << 20), "é", "", "\n}\n"]  # one past the batch size, a non-ASCII one, an empty one

    @click.command()
    def _parts() -> None:
        emit(iter(parts), None, force=False)
        emit(iter(parts), str(tmp_path / "out.json"), force=False)

    result = CliRunner().invoke(_parts)
    assert result.exception is None, result.exception
    assert result.stdout_bytes == "".join(parts).encode()
    assert (tmp_path / "out.json").read_bytes() == "".join(parts).encode()
