"""The words every output uses for time.

One vocabulary of time: *device cycles per step* (what Graph Analyser's execution view spans:
the device phases), *host/runtime time per step* (outside the device's program; not device
time) and *time per session.run* = device time + host/runtime time.
"""

from __future__ import annotations

from typing import Any

from profcompare.render.format import format_cycles, format_seconds, is_missing

#: Title of the execution section (text, markdown).
EXECUTION_TITLE = "Execution: device cycles by phase"

#: What the execution table holds and what it leaves out.
DEVICE_PHASES_NOTE = (
    "Device phases only: their span is the device cycles per step (what Graph Analyser's execution view spans). "
    "Each cycle counts once, under one phase, so the phases add up to it (where phases overlap, the first of "
    "compute, exchange, host I/O, Streaming Memory, collective; sync is the waiting no other phase covers). "
    "Host/runtime time is not device time and is not in these cycles; it is listed below."
)


def time_per_run_text(summary: Any, clock_hz: float) -> str:
    """One report's time per ``session.run`` in words, from its summary: "time per session.run
    1.405 ms = device 0.679 ms (902,960 device cycles at 1.330 GHz) + host/runtime 0.726 ms"."""
    cycles, host, seconds = summary["cycles_per_step"], summary["host_seconds_per_step"], summary["seconds_per_step"]
    if is_missing(cycles):
        return "no execution profile: time is not known."
    device = float(cycles) / clock_hz
    device_text = f"device {format_seconds(device)} ({format_cycles(cycles)} device cycles at {clock_hz / 1e9:.3f} GHz)"
    if is_missing(host):
        return (f"time per session.run {format_seconds(seconds)} = {device_text}; the profile records no "
                "host/runtime time.")
    return f"time per session.run {format_seconds(seconds)} = {device_text} + host/runtime {format_seconds(host)}."


__all__ = ["DEVICE_PHASES_NOTE", "EXECUTION_TITLE", "time_per_run_text"]
