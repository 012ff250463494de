"""The Streaming Memory totals over all replicas, in one sentence for a report or a comparison."""

from __future__ import annotations

from profcompare.analysis import replicas
from profcompare.model import Report
from profcompare.render.format import format_bytes


def streaming_totals_note(report: Report) -> str | None:
    """Streaming Memory over all replicas, in one sentence (None for one replica or no buffer)."""
    totals = replicas.streaming_totals(report)
    if totals.replicas <= 1 or not totals.per_replica:
        return None
    text = (f"All {totals.replicas} replicas: {format_bytes(totals.all_replicas)} = "
            f"{format_bytes(totals.per_replica)} per replica x {totals.replicas} (exact: each replica holds its "
            "own remote buffers")
    if totals.sharded_per_replica:
        text += (f"; the replica-sharded ones, {format_bytes(totals.sharded_per_replica)} per replica, "
                 f"are a different shard on each replica, {format_bytes(totals.sharded_all_replicas)} in all")
    return text + ")."


def comparison_streaming_totals_note(base: Report, new: Report) -> str | None:
    """Streaming Memory over all replicas of both reports, in one sentence (None when neither
    has more than one replica and a buffer)."""
    b, n = replicas.streaming_totals(base), replicas.streaming_totals(new)
    if max(b.replicas, n.replicas) <= 1 or not (b.per_replica or n.per_replica):
        return None
    return (f"Over all replicas (per replica x replicas, exact): base {format_bytes(b.all_replicas)} "
            f"({b.replicas} x {format_bytes(b.per_replica)}), new {format_bytes(n.all_replicas)} "
            f"({n.replicas} x {format_bytes(n.per_replica)}).")


__all__ = ["comparison_streaming_totals_note", "streaming_totals_note"]
