"""The simulator's execution trace against a real Graph Analyser trace of the same program.

    python benchmarks/trace_fidelity.py --program PATH/examples/mnist/3_Pipelining/mnist.py \\
        [--cache ../shared/data/ga_cache_popxl_mnist_pipelining_2ipu.sqlite] [-- PROGRAM ARGS...]

Runs the program unmodified under ``profcompare profile --backend sim`` (in its own directory,
with its own default arguments unless PROGRAM ARGS are given), takes the report of its Session
with the most IPUs (the training session), reads the cache's measured trace, and prints per IPU
-- simulated vs measured (mean over the measured runs), with errors -- the span, blocks and
cycles per block type, the pipeline's ramp-up / steady / ramp-down cycles, and how much host
copies and compute overlap across IPUs. The comparison is profcompare.analysis.trace_fidelity's (pure).
The last line is ``trace fidelity: span error IPU0 +x%, IPU1 +y%; block counts max error z%;
cycles per type max error w%``.

The program needs its own imports (popxl-addons' MNIST examples import torch and torchvision and
download MNIST): put them on PYTHONPATH; the trace's shape does not depend on the data's values,
so a stand-in dataset of MNIST's shapes gives the same trace.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = ROOT.parent / "shared" / "data" / "ga_cache_popxl_mnist_pipelining_2ipu.sqlite"


def _pct(x: float) -> str:
    return "n/a" if x != x or x in (float("inf"), float("-inf")) else f"{x * 100:+.1f}%"


def simulated_report(program: Path, args: list[str], out: Path):
    """Run ``program`` under the simulator; the report of its Session with the most IPUs."""
    from profcompare.readers import open_report

    cmd = [sys.executable, "-m", "profcompare", "profile", "--backend", "sim", "-q", "--out", str(out),
           "--name", "trace", "--force", program.name, *args]
    done = subprocess.run(cmd, cwd=program.parent, capture_output=True, text=True, env=dict(os.environ))
    if done.returncode != 0:
        sys.exit(f"trace_fidelity: the program failed under the simulator:\n{done.stderr[-3000:]}{done.stdout[-2000:]}")
    best = None
    for path in sorted((out / "trace").glob("*/session-*/profile.sqlite"),
                       key=lambda p: int(p.parent.name.split("-")[-1])):
        report = open_report(path)
        ipus = int(report.trace["ipu"].nunique()) if len(report.trace) else 0
        if best is None or ipus > best[0]:
            best = (ipus, report, path)
    if best is None:
        sys.exit("trace_fidelity: the program left no report with an execution trace")
    return best[1], best[2]


def print_comparison(c) -> None:
    """The comparison's tables (markdown)."""
    print(f"measured runs in the cache: {c.real_runs} (spans {', '.join(str(dict(s)) for s in c.real_run_spans)}); "
          "simulated: one run; measured figures are per run (mean)")
    print()
    print("| IPU | span simulated | span measured | error |")
    print("|---|---|---|---|")
    for i in c.ipus:
        print(f"| {i} | {c.sim_spans.get(i, 0):,} | {c.real_spans.get(i, 0):,.0f} | {_pct(c.span_error(i))} |")
    print()
    print("| IPU | type | blocks sim | blocks real | error | cycles sim | cycles real | error |")
    print("|---|---|---|---|---|---|---|---|")
    for r in c.rows:
        note = " (waits; not modelled)" if r not in c.compared_rows else ""
        print(f"| {r.ipu} | {r.type}{note} | {r.sim_blocks:,} | {r.real_blocks:,.0f} | {_pct(r.blocks_error)} | "
              f"{r.sim_cycles:,} | {r.real_cycles:,.0f} | {_pct(r.cycles_error)} |")
    print()
    print("| pipeline | simulated | measured |")
    print("|---|---|---|")
    for kind in ("ramp-up", "steady", "ramp-down"):
        s, m = c.sim_pipeline, c.real_pipeline
        print(f"| {kind} cycles | {s.count(kind)} | {m.count(kind)} |")
        print(f"| {kind} mean cycle length | {s.mean_length(kind):,.0f} | {m.mean_length(kind):,.0f} "
              f"({_pct((s.mean_length(kind) - m.mean_length(kind)) / m.mean_length(kind)) if m.mean_length(kind) else 'n/a'}) |")
    for label, sp, mp in (("compute per pipeline cycle, IPU", c.sim_pipeline, c.real_pipeline),):
        for k, ipu in enumerate(mp.ipus):
            sim = [row[k] for row in sp.compute] if k < len(sp.ipus) else []
            print(f"| {label} {ipu} | {', '.join(f'{v:,}' for v in sim)} | {', '.join(f'{row[k]:,}' for row in mp.compute)} |")
    print()
    so, ro = c.sim_overlaps, c.real_overlaps
    print("| overlap across IPUs | simulated | measured |")
    print("|---|---|---|")
    print(f"| host-copy time with every IPU in the copy | {so.host_copies_together:.1%} | {ro.host_copies_together:.1%} |")
    print(f"| compute time with every IPU computing | {so.compute_together:.1%} | {ro.compute_together:.1%} |")
    for i in c.ipus:
        print(f"| IPU {i} waiting (SyncAns cycles, first run) | {so.waiting.get(i, 0):,} | {ro.waiting.get(i, 0):,} |")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--program", required=True, type=Path, help="the popxl program (its examples/.../mnist.py)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="Graph Analyser cache of the real run")
    parser.add_argument("program_args", nargs="*", help="the program's arguments (default: its own defaults)")
    ns = parser.parse_args(argv)
    if not ns.program.is_file():
        sys.exit(f"trace_fidelity: no program at {ns.program}")
    if not ns.cache.is_file():
        sys.exit(f"trace_fidelity: no Graph Analyser cache at {ns.cache}")
    from profcompare.errors import ProfcompareError
    from profcompare.readers import open_report
    from profcompare.analysis.trace_fidelity import compare_traces

    try:
        measured = open_report(ns.cache)
        with tempfile.TemporaryDirectory(prefix="trace_fidelity_") as tmp:
            report, path = simulated_report(ns.program.resolve(), list(ns.program_args), Path(tmp))
            print(f"simulated: {ns.program} ({path.parent.name}, {report.trace['ipu'].nunique()} IPUs)")
        comparison = compare_traces(report.trace, measured.trace)
    except (ProfcompareError, ValueError) as exc:
        sys.exit(f"trace_fidelity: {exc}")
    print_comparison(comparison)
    print(comparison.summary_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
