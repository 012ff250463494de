"""Placeholder for `profcompare runs` until its module is written."""

from __future__ import annotations

import click


@click.command(name="runs")
def command() -> None:
    """(not yet available)"""
    raise click.UsageError("'runs' is not available yet")
