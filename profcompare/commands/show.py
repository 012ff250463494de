"""Placeholder for `profcompare show` until its module is written."""

from __future__ import annotations

import click


@click.command(name="show")
def command() -> None:
    """(not yet available)"""
    raise click.UsageError("'show' is not available yet")
