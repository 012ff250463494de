"""Placeholder for `profcompare sweep` until its module is written."""

from __future__ import annotations

import click


@click.command(name="sweep")
def command() -> None:
    """(not yet available)"""
    raise click.UsageError("'sweep' is not available yet")
