"""The simulator's time model against every public timing, and the four MNIST variants side by side.

    python benchmarks/fidelity.py --tutorials PATH                # markdown tables, as in docs/ipu-model.md
    python benchmarks/fidelity.py --tutorials PATH --write-docs   # rewrite docs/ipu-model.md section 8's tables
    python benchmarks/fidelity.py                                 # without a checkout: tables 2 and 3 only

PATH is a checkout of graphcore/examples (the popxl tutorials at tutorials/tutorials/popxl; the
tutorials' directory itself works too). Nothing of it is part of this project.

Table 1: each public timing of the popxl tutorials (profcompare.emulator.compile.calibration
.PUBLIC_POINTS), published vs the time per run of the report of the tutorial's own ``mnist.py``
run unmodified under ``profcompare profile --backend sim`` at its notebook's configuration
(benchmarks/tutorial_points.py), the error, and whether the point was fitted (two constants, one
point each) or validated. Table 2: the four MNIST variants at the workload's defaults (the
tutorial's DP 4, GA 8, micro-batch 8, threshold 512), per replica. Table 3: the simulated execution
trace of a 2-IPU pipelined MLP (the shape of popxl-addons' pipelined MNIST) against the real Graph
Analyser trace in ../shared/data (or ``--trace``; docs section 12), when that file is there.

``--write-docs`` replaces each table in docs/ipu-model.md between its marker comments
(``<!-- fidelity.py:NAME -->`` and ``<!-- /fidelity.py:NAME -->``); a table this run cannot make
(no trace file) is left as it is.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "ipu-model.md"

from programs import workload_program  # noqa: E402

from profcompare.emulator.compile import compile_program  # noqa: E402
from profcompare.emulator.compile.calibration import FidelityRow, fidelity  # noqa: E402
from profcompare.errors import ProfcompareError  # noqa: E402

VARIANTS = ("onchip", "onchip-sharded", "offchip", "offchip-sharded")


def _mb(n: float) -> str:
    return f"{n / 1e6:,.2f} MB"


def points_table(rows: Sequence[FidelityRow]) -> list[str]:
    """Table 1: published against modelled, and whether each point is fitted or validated."""
    lines = ["| public point (the tutorial's own program) | published | modelled | error | fitted or validated |",
             "|---|---|---|---|---|"]
    for row in rows:
        p = row.point
        used = f"fitted ({p.role.removeprefix('fit ')})" if p.fitted else "validated"
        lines.append(f"| {p.what} | {p.seconds * 1e3:.4f} ms | {row.modelled_seconds * 1e3:.4f} ms | "
                     f"{row.error * 100:+.1f}% | {used} |")
    return lines


def variants_table() -> list[str]:
    """Table 2: the four MNIST variants at the workload's defaults, per replica."""
    from workloads import mnist

    compiled = {}
    for v in VARIANTS:
        c = compile_program(workload_program(v, {}), samples_per_step=mnist.samples_per_step(
            {k.name: k.default for k in mnist.KNOBS}))
        compiled[v] = (c, c.with_execution(1).summary())
    lines = ["| per replica | " + " | ".join(VARIANTS) + " |", "|---|" + "---|" * len(VARIANTS)]
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
        lines.append(f"| {label} | " + " | ".join(fn(*compiled[v]) for v in VARIANTS) + " |")
    base = compiled["onchip"][1]["seconds_per_step"]
    lines.append("| time relative to onchip | " + " | ".join(
        f"{compiled[v][1]['seconds_per_step'] / base:.2f}x" for v in VARIANTS) + " |")
    return lines


TRACE_CACHE = ROOT.parent / "shared" / "data" / "ga_cache_popxl_mnist_pipelining_2ipu.sqlite"


def trace_table(cache: Path = TRACE_CACHE) -> tuple[list[str], str] | None:
    """Table 3 and its summary line: the execution trace of the 2-IPU pipelined MLP
    (tests/readers/pipelined_mlp_program.py, the real program's shape) against the real Graph
    Analyser trace ``cache`` (docs section 12); None without that file."""
    if not cache.is_file():
        return None
    sys.path.insert(0, str(ROOT / "tests" / "readers"))
    from pipelined_mlp_program import pipelined_mlp_ir

    from profcompare.analysis.trace_fidelity import compare_traces
    from profcompare.emulator.lowering import lower
    from profcompare.readers import open_report

    report = compile_program(lower(pipelined_mlp_ir())).with_execution(1)
    c = compare_traces(report.trace, open_report(cache).trace)
    lines = ["| real trace: popxl-addons pipelined MNIST, 2 Mk2 IPUs (per run) | measured | modelled | error | target |",
             "|---|---|---|---|---|"]
    for ipu in c.ipus:
        lines.append(f"| span, IPU {ipu} (cycles) | {c.real_spans[ipu]:,.0f} | {c.sim_spans[ipu]:,} | "
                     f"{c.span_error(ipu) * 100:+.1f}% | 15% |")
    for r in c.compared_rows:
        lines.append(f"| IPU {r.ipu} {r.type}: blocks / cycles | {r.real_blocks:,.0f} / {r.real_cycles:,.0f} | "
                     f"{r.sim_blocks:,} / {r.sim_cycles:,} | {r.blocks_error * 100:+.1f}% / "
                     f"{r.cycles_error * 100:+.1f}% | 20% / 25% |")
    for kind in ("ramp-up", "steady", "ramp-down"):
        lines.append(f"| {kind} pipeline cycles, mean length | {c.real_pipeline.count(kind)}, "
                     f"{c.real_pipeline.mean_length(kind):,.0f} | {c.sim_pipeline.count(kind)}, "
                     f"{c.sim_pipeline.mean_length(kind):,.0f} | | |")
    lines.append(f"| host-copy time with both IPUs in the copy | {c.real_overlaps.host_copies_together:.1%} | "
                 f"{c.sim_overlaps.host_copies_together:.1%} | | |")
    return lines, c.summary_line()


def _state(c) -> int:
    """Bytes of the main graph's optimizer-state variables (not their copies inside called graphs)."""
    v = c.report.variables
    main = ~v["name"].astype(str).str.contains("/", regex=False)
    return int(v.loc[main & (v["kind"].astype(str) == "optimizer_state"), "bytes"].sum())


def replace_block(text: str, name: str, lines: Sequence[str]) -> str:
    """``text`` with the lines between ``<!-- fidelity.py:NAME -->`` and ``<!-- /fidelity.py:NAME -->``
    replaced by ``lines``; ProfcompareError when the markers are not there once each, in order."""
    begin, end = f"<!-- fidelity.py:{name} -->", f"<!-- /fidelity.py:{name} -->"
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.DOTALL)
    if text.count(begin) != 1 or text.count(end) != 1 or not pattern.search(text):
        raise ProfcompareError(f"the docs have no single {begin} ... {end} block")
    return pattern.sub(lambda _m: "\n".join([begin, *lines, end]), text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tutorials", type=Path, help="a graphcore/examples checkout (the popxl tutorials' programs)")
    parser.add_argument("--out", type=Path, help="keep the tutorials' runs here (default: a temporary directory)")
    parser.add_argument("--write-docs", action="store_true", help="rewrite docs/ipu-model.md section 8's tables")
    parser.add_argument("--trace", type=Path, default=TRACE_CACHE, help="the real Graph Analyser trace of table 3")
    parser.add_argument("--docs", type=Path, default=DOCS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.write_docs and args.tutorials is None:
        print("fidelity: --write-docs needs --tutorials: the public points' table comes from the tutorials' runs",
              file=sys.stderr)
        return 2
    if args.tutorials is not None and not args.tutorials.is_dir():
        print(f"fidelity: --tutorials {args.tutorials}: not a directory", file=sys.stderr)
        return 2
    blocks: dict[str, list[str]] = {}
    if args.tutorials is None:
        print("(the public points run the tutorials' own programs: give --tutorials PATH, a graphcore/examples "
              "checkout, for table 1)")
    else:
        from tutorial_points import run_points

        try:
            runs = run_points(args.tutorials.resolve(), args.out, log=lambda s: print(s, file=sys.stderr))
        except ProfcompareError as exc:
            print(f"fidelity: {exc}", file=sys.stderr)
            return 2
        # the reports' own time per run; their components give the same with the model's constants
        for run, row in zip(runs, fidelity({r.point.key: r.components for r in runs}), strict=True):
            if abs(row.modelled_seconds - run.seconds) > 1e-9 * run.seconds:
                print(f"fidelity: {run.point.key}: the report says {run.seconds * 1e3:.6f} ms per run, its components "
                      f"{row.modelled_seconds * 1e3:.6f} ms", file=sys.stderr)
                return 1
        blocks["public-points"] = points_table([FidelityRow(r.point, r.seconds) for r in runs])
    blocks["variants"] = variants_table()
    trace = trace_table(args.trace)
    if trace is not None:
        blocks["trace"] = trace[0]
    for lines in blocks.values():
        print("\n".join(lines))
        print()
    if trace is None:
        print(f"(no real trace at {args.trace}: the trace rows need shared/data or --trace)")
    else:
        print(trace[1])
    if args.write_docs:
        try:
            text = args.docs.read_text(encoding="utf-8")
            for name, lines in blocks.items():
                text = replace_block(text, name, lines)
        except (OSError, ProfcompareError) as exc:
            print(f"fidelity: {args.docs}: {exc}", file=sys.stderr)
            return 2
        tmp = args.docs.with_name(args.docs.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(args.docs)
        print(f"wrote {', '.join(blocks)} into {args.docs}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
