"""Placeholder for `profcompare compare` until its module is written."""

from __future__ import annotations

import click


@click.command(name="compare")
def command() -> None:
    """(not yet available)"""
    raise click.UsageError("'compare' is not available yet")
