"""``profcompare workloads``: the workloads ``run`` and ``sweep`` know, their variants and knobs."""

from __future__ import annotations

from typing import Any

import click


def describe_workloads(workloads: list[Any]) -> str:
    """Plain-text listing: per workload its description, variants (with descriptions) and knobs.

    Knobs show their command-line option, type, default and choices.
    """
    lines: list[str] = []
    for workload in workloads:
        if lines:
            lines.append("")
        lines.append(f"{workload.name}: {workload.description}")
        lines.append("  variants:")
        width = max((len(v) for v in workload.variants), default=0)
        for variant, text in workload.variants.items():
            lines.append(f"    {variant:<{width}}  {text}")
        lines.append("  knobs (options of `run` and `sweep`; any knob also as --set NAME=VALUE):")
        rows = []
        for knob in workload.knobs:
            default = repr(knob.default) if knob.default == "" else str(knob.default)
            extra = f"; one of {', '.join(map(str, knob.choices))}" if knob.choices else ""
            rows.append((f"--{knob.name.replace('_', '-')}", getattr(knob.type, "__name__", str(knob.type)), default, f"{knob.help}{extra}"))
        widths = [max(len(r[i]) for r in rows) for i in range(3)] if rows else [0, 0, 0]
        for option, type_name, default, text in rows:
            lines.append(f"    {option:<{widths[0]}}  {type_name:<{widths[1]}}  default {default:<{widths[2]}}  {text}")
    return "\n".join(lines)


@click.command(name="workloads")
def command() -> None:
    """List the workloads, their variants and their knobs (with defaults)."""
    from profcompare.runner import workload_registry

    workloads = workload_registry().list_workloads()
    if not workloads:
        click.echo("no workloads found")
        return
    click.echo(describe_workloads(workloads))


__all__ = ["command", "describe_workloads"]
