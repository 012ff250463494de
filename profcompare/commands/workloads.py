"""``profcompare workloads``: the workloads ``run`` and ``sweep`` know, their variants and knobs."""

from __future__ import annotations

from typing import Any

import click


def describe_workloads(workloads: list[Any], width: int | None = None) -> str:
    """Plain-text listing: per workload its description, variants (with descriptions) and knobs.

    Knobs show their command-line option, type, default and choices. With a ``width`` every
    line fits it: descriptions wrap at spaces under their own column.
    """
    from profcompare.render.table_fit import wrap_text

    lines: list[str] = []
    for workload in workloads:
        if lines:
            lines.append("")
        lines.extend(wrap_text(f"{workload.name}: {workload.description}", width, rest="  "))
        lines.extend(wrap_text(f"variants (`run --workload {workload.name} VARIANT...` finds them in this workload "
                               "only):", width, first="  ", rest="    "))
        name_width = max((len(v) for v in workload.variants), default=0)
        for variant, text in workload.variants.items():
            lead = f"    {variant:<{name_width}}  "
            lines.extend(wrap_text(text, width, first=lead, rest=" " * len(lead)))
        lines.extend(wrap_text("knobs (options of `run` and `sweep`; any knob also as --set NAME=VALUE):", width,
                               first="  ", rest="    "))
        rows = []
        for knob in workload.knobs:
            default = repr(knob.default) if knob.default == "" else str(knob.default)
            extra = f"; one of {', '.join(map(str, knob.choices))}" if knob.choices else ""
            rows.append((f"--{knob.name.replace('_', '-')}", getattr(knob.type, "__name__", str(knob.type)), default, f"{knob.help}{extra}"))
        widths = [max(len(r[i]) for r in rows) for i in range(3)] if rows else [0, 0, 0]
        for option, type_name, default, text in rows:
            lead = f"    {option:<{widths[0]}}  {type_name:<{widths[1]}}  default {default:<{widths[2]}}  "
            lines.extend(wrap_text(text, width, first=lead, rest=" " * len(lead)))
    return "\n".join(lines)


@click.command(name="workloads")
def command() -> None:
    """List the workloads, their variants and their knobs (with defaults)."""
    from profcompare.runner import workload_registry

    workloads = workload_registry().list_workloads()
    if not workloads:
        click.echo("no workloads found")
        return
    from profcompare.commands._common import text_width

    click.echo(describe_workloads(workloads, text_width()))


__all__ = ["command", "describe_workloads"]
