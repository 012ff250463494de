"""The simulator's time model against every public timing, and the four MNIST variants side by side.

    python benchmarks/fidelity.py            # markdown tables, as in docs/ipu-model.md

Table 3: the simulated execution trace of a 2-IPU pipelined MLP (the shape of popxl-addons'
pipelined MNIST) against the real Graph Analyser trace in ../shared/data (docs section 12), when
that file is there. Table 1: each public timing of the popxl tutorials (profcompare.emulator.compile.calibration
.PUBLIC_POINTS), published vs modelled time per run, the error, and whether the point was fitted
(two constants, one point each) or only validated. Table 2: the four MNIST variants at the
workload's defaults (the tutorial's DP 4, GA 8, micro-batch 8, threshold 512), per replica.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parent.parent

from programs import point_program, workload_program  # noqa: E402

from profcompare.emulator.compile import compile_program  # noqa: E402
from profcompare.emulator.compile.calibration import fidelity  # noqa: E402

VARIANTS = ("onchip", "onchip-sharded", "offchip", "offchip-sharded")


def _mb(n: float) -> str:
    return f"{n / 1e6:,.2f} MB"


def main() -> int:
    print("| public point | published | modelled | error | used for |")
    print("|---|---|---|---|---|")
    for row in fidelity(point_program):
        p = row.point
        print(f"| {p.what} | {p.seconds * 1e3:.4f} ms | {row.modelled_seconds * 1e3:.4f} ms | "
              f"{row.error * 100:+.1f}% | {p.role} |")
    print()
    compiled = {}
    for v in VARIANTS:
        from workloads import mnist

        c = compile_program(workload_program(v, {}), samples_per_step=mnist.samples_per_step(
            {k.name: k.default for k in mnist.KNOBS}))
        compiled[v] = (c, c.with_execution(1).summary())
    print("| per replica | " + " | ".join(VARIANTS) + " |")
    print("|---|" + "---|" * len(VARIANTS))
    rows = [
        ("optimizer state variables in tile memory (exact)", lambda c, s: _mb(_state(c))),
        ("Streaming Memory (exact)", lambda c, s: _mb(s["streaming_memory_bytes"])),
        ("always-live (modelled)", lambda c, s: _mb(s["always_live_bytes"])),
        ("not-always-live peak (modelled)", lambda c, s: _mb(s["not_always_live_peak_bytes"])),
        ("code (modelled)", lambda c, s: _mb(s["code_bytes"])),
        ("program steps (liveness view)", lambda c, s: f"{len(c.report.liveness):,}"),
        ("device cycles per step (modelled)", lambda c, s: f"{s['cycles_per_step']:,.0f}"),
        ("time per session.run (modelled)", lambda c, s: f"{s['seconds_per_step'] * 1e3:.3f} ms"),
        ("samples/s (modelled)", lambda c, s: f"{s['samples_per_second']:,.0f}"),
    ]
    for label, fn in rows:
        print(f"| {label} | " + " | ".join(fn(*compiled[v]) for v in VARIANTS) + " |")
    base = compiled["onchip"][1]["seconds_per_step"]
    print("| time relative to onchip | " + " | ".join(
        f"{compiled[v][1]['seconds_per_step'] / base:.2f}x" for v in VARIANTS) + " |")
    print()
    trace_table()
    return 0


TRACE_CACHE = ROOT.parent / "shared" / "data" / "ga_cache_popxl_mnist_pipelining_2ipu.sqlite"


def trace_table() -> None:
    """The execution trace of the 2-IPU pipelined MLP (tests/readers/pipelined_mlp_program.py, the
    real program's shape) against the real Graph Analyser trace: the targets of docs section 12."""
    if not TRACE_CACHE.is_file():
        print(f"(no real trace at {TRACE_CACHE}: the trace rows need shared/data)")
        return
    sys.path.insert(0, str(ROOT / "tests" / "readers"))
    from pipelined_mlp_program import pipelined_mlp_ir

    from profcompare.emulator.lowering import lower
    from profcompare.readers import open_report
    from profcompare.analysis.trace_fidelity import compare_traces

    report = compile_program(lower(pipelined_mlp_ir())).with_execution(1)
    c = compare_traces(report.trace, open_report(TRACE_CACHE).trace)
    print("| real trace: popxl-addons pipelined MNIST, 2 Mk2 IPUs (per run) | measured | modelled | error | target |")
    print("|---|---|---|---|---|")
    for ipu in c.ipus:
        print(f"| span, IPU {ipu} (cycles) | {c.real_spans[ipu]:,.0f} | {c.sim_spans[ipu]:,} | "
              f"{c.span_error(ipu) * 100:+.1f}% | 15% |")
    for r in c.compared_rows:
        print(f"| IPU {r.ipu} {r.type}: blocks / cycles | {r.real_blocks:,.0f} / {r.real_cycles:,.0f} | "
              f"{r.sim_blocks:,} / {r.sim_cycles:,} | {r.blocks_error * 100:+.1f}% / {r.cycles_error * 100:+.1f}% | "
              "20% / 25% |")
    for kind in ("ramp-up", "steady", "ramp-down"):
        print(f"| {kind} pipeline cycles, mean length | {c.real_pipeline.count(kind)}, "
              f"{c.real_pipeline.mean_length(kind):,.0f} | {c.sim_pipeline.count(kind)}, "
              f"{c.sim_pipeline.mean_length(kind):,.0f} | | |")
    print(f"| host-copy time with both IPUs in the copy | {c.real_overlaps.host_copies_together:.1%} | "
          f"{c.sim_overlaps.host_copies_together:.1%} | | |")
    print()
    print(c.summary_line())


def _state(c) -> int:
    """Bytes of the main graph's optimizer-state variables (not their copies inside called graphs)."""
    v = c.report.variables
    main = ~v["name"].astype(str).str.contains("/", regex=False)
    return int(v.loc[main & (v["kind"].astype(str) == "optimizer_state"), "bytes"].sum())


if __name__ == "__main__":
    sys.exit(main())
