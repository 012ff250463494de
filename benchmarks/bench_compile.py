"""Compile-time benchmark of the simulator's compile model.

Prints the time to compile MNIST-size programs (the four tutorial variants, built by the
synthetic generator) and the curve for synthetic MLPs of 25, 50, 100 and 200 layers with the
time per layer, which should stay roughly flat (compile time linear in program size).

    python benchmarks/bench_compile.py [--layers 25,50,100,200] [--hidden 512] [--repeat 1]
"""

from __future__ import annotations

import argparse
import time

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.synthetic import mlp_program

MNIST_VARIANTS = {
    "onchip": {},
    "onchip-sharded": {"sharded": True},
    "offchip": {"remote": True},
    "offchip-sharded": {"remote": True, "sharded": True},
}


def _time(program, repeat: int) -> tuple[float, object]:
    best = float("inf")
    compiled = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        compiled = compile_program(program)
        best = min(best, time.perf_counter() - t0)
    return best, compiled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default="25,50,100,200")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    print("MNIST-size programs (784-512-512-512-10, 4 replicas, GA 8, micro-batch 8):")
    for name, kw in MNIST_VARIANTS.items():
        program = mlp_program(layers=4, replicas=4, grad_accum=8, **kw)
        seconds, compiled = _time(program, args.repeat)
        print(f"  {name:16s} {seconds * 1e3:8.1f} ms  ({len(program.ops)} ops, "
              f"{compiled.steps.num_executed} executed steps)")

    print(f"\nSynthetic MLP, hidden {args.hidden}, 4 replicas, GA 2, off-chip sharded state:")
    print(f"  {'layers':>6s} {'ops':>7s} {'steps':>7s} {'compile s':>10s} {'ms/layer':>9s}")
    for layers in (int(x) for x in args.layers.split(",")):
        program = mlp_program(layers=layers, hidden=args.hidden, replicas=4, grad_accum=2, remote=True, sharded=True)
        seconds, compiled = _time(program, args.repeat)
        print(f"  {layers:6d} {len(program.ops):7d} {compiled.steps.num_executed:7d} {seconds:10.2f} "
              f"{seconds / layers * 1e3:9.1f}")


if __name__ == "__main__":
    main()
