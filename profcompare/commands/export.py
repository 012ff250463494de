"""Placeholder for `profcompare export` until its module is written."""

from __future__ import annotations

import click


@click.command(name="export")
def command() -> None:
    """(not yet available)"""
    raise click.UsageError("'export' is not available yet")
