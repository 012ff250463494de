"""Placeholder for `profcompare variables` until its module is written."""

from __future__ import annotations

import click


@click.command(name="variables")
def command() -> None:
    """(not yet available)"""
    raise click.UsageError("'variables' is not available yet")
