"""Compile-only scale benchmark: the gpt workload at LLM sizes on the simulator.

Each size runs in a fresh subprocess with ``PROFCOMPARE_SIM_EXECUTION=compile-only`` and
autoReport on (the report is written, then removed): build the program, create the Session
(lowering, liveness, per-tile memory, cycles, the report write) and run one step. Prints the
build, compile (Session creation) and total seconds, the peak RSS of the process and the
program's size (executed steps, variables, tiles).

    python benchmarks/bench_llm.py                    # GPT-J 6B at gptj_6B_1024_pod16 size
    python benchmarks/bench_llm.py --size 175b        # a GPT-3 175B decoder stack, TP 16 x DP 16
    python benchmarks/bench_llm.py --size custom --set layers=8 --set hidden=1024   # anything else
    python benchmarks/bench_llm.py --repeat 3         # medians of 3 runs

Sizes (``--variant`` picks the layout, default phased-rts):
- ``6b``: GPT-J 6B as Graphcore's ``gptj_6B_1024_pod16`` configuration (28 layers, hidden 4096,
  16 heads, sequence 1024, vocabulary 50400, micro-batch 1, TP 16 x DP 1, 128 I/O tiles, matmul
  available memory proportion 0.2);
  gradient accumulation 16 (the configuration's is 128: the program holds one copy of the
  micro-batch loop per accumulated micro-batch, so this is the figure to scale).
- ``175b``: 96 layers, hidden 12288, 96 heads, sequence 2048, vocabulary 50400 (GPT-3's), TP 16
  x DP 16, micro-batch 1, gradient accumulation 2.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SIZES = {
    "6b": {"layers": 28, "hidden": 4096, "heads": 16, "seq": 1024, "vocab": 50400, "micro_batch": 1,
           "grad_accum": 16, "tp": 16, "dp": 1, "io_tiles": 128, "amp": 0.2},
    "175b": {"layers": 96, "hidden": 12288, "heads": 96, "seq": 2048, "vocab": 50400, "micro_batch": 1,
             "grad_accum": 2, "tp": 16, "dp": 16, "io_tiles": 128},
    "custom": {"layers": 2, "hidden": 1024, "heads": 16, "seq": 1024, "vocab": 50400, "micro_batch": 1,
               "grad_accum": 2, "tp": 4, "dp": 2, "io_tiles": 0},
}

_CHILD = r"""
import json, resource, sys, time
start = time.perf_counter()
from workloads import find_variant, parse_knobs
variant, overrides = sys.argv[1], json.loads(sys.argv[2])
workload = find_variant(variant)
result = workload.run(variant, parse_knobs(workload, {**overrides, "steps": 1}))
done = time.perf_counter()
print(json.dumps({"import_and_build": done - start - result.compile_seconds - result.run_seconds,
                  "compile": result.compile_seconds, "total": done - start,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _run_once(variant: str, overrides: dict, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-llm-") as reports:
        env = dict(os.environ, PROFCOMPARE_SIM_EXECUTION="compile-only", PROFCOMPARE_BACKEND="sim",
                   POPLAR_ENGINE_OPTIONS=json.dumps({"autoReport.all": "true", "autoReport.directory": reports,
                                                         "debug.allowOutOfMemory": "true"}))
        proc = subprocess.run([sys.executable, "-c", _CHILD, variant, json.dumps(overrides)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise SystemExit(f"bench_llm: {variant} failed:\n{proc.stderr[-4000:]}")
        figures = json.loads(proc.stdout.strip().splitlines()[-1])
        store = next(Path(reports).rglob("*.sqlite"), None)
        figures["report_mib"] = store.stat().st_size / 2**20 if store else 0.0
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="6b")
    parser.add_argument("--variant", default="phased-rts")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    args = parser.parse_args()
    overrides = dict(SIZES[args.size])
    for item in args.set:
        name, _, value = item.partition("=")
        overrides[name] = int(value) if value.lstrip("-").isdigit() else value
    runs = [_run_once(args.variant, overrides, args.timeout) for _ in range(args.repeat)]
    median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    print(f"gpt {args.variant}, size {args.size}: " + ", ".join(f"{k}={v}" for k, v in overrides.items()))
    print(f"  median of {len(runs)}: build {median['import_and_build']:.1f} s, compile {median['compile']:.1f} s, "
          f"total {median['total']:.1f} s, peak RSS {median['peak_rss_mib']:.0f} MiB, "
          f"report {median['report_mib']:.1f} MiB")
    if len(runs) > 1:
        print("  totals: " + ", ".join(f"{run['total']:.1f}" for run in runs) + " s")


if __name__ == "__main__":
    main()
