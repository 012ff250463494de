"""``profcompare export PROFILE.pop -o FILE.sqlite``: convert a Poplar profile to our store format.

Needs the Poplar SDK's ``pva`` module (run it where the SDK is installed); the resulting
``profile.sqlite`` then opens anywhere, without the SDK.
"""

from __future__ import annotations

import click

from profcompare.errors import ProfcompareError


@click.command(name="export")
@click.argument("profile", type=click.Path())
@click.option("-o", "--output", required=True, metavar="FILE", help="Store file to write (e.g. profile.sqlite).")
@click.option("--debug-cbor", "debug_cbor", default=None, metavar="FILE",
              help="Poplar's debug.cbor, for debug information (operations, debug contexts).")
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
@click.option("--no-code", "no_code", is_flag=True,
              help="Skip the per-program code (the slow part of reading big profiles); the code table stays empty.")
def command(profile: str, output: str, debug_cbor: str | None, force: bool, no_code: bool) -> None:
    """Read the Poplar profile PROFILE (profile.pop) with the SDK's pva module and write it as a
    profcompare store file, readable without the SDK."""
    if output == "-":
        raise ProfcompareError("export writes an SQLite file, not a stream; give -o FILE.sqlite")
    from profcompare.commands._common import pva_progress
    from profcompare.readers.pva import export_pva

    written = export_pva(profile, output, debug_cbor, overwrite=force, code=not no_code, progress=pva_progress())
    click.echo(f"wrote {written}")
