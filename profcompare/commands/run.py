"""Placeholder for `profcompare run` until its module is written."""

from __future__ import annotations

import click


@click.command(name="run")
def command() -> None:
    """(not yet available)"""
    raise click.UsageError("'run' is not available yet")
