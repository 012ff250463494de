"""Placeholder for `profcompare workloads` until its module is written."""

from __future__ import annotations

import click


@click.command(name="workloads")
def command() -> None:
    """(not yet available)"""
    raise click.UsageError("'workloads' is not available yet")
