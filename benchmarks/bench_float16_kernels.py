"""How long the numeric executor's float16 kernels take on a T5 attention score.

Usage::

    python benchmarks/bench_float16_kernels.py [--repeat 5] [--shape 2,2,2,512,512]

The tensor is what the T5 execution test's training holds at each attention (graphcore/examples
``nlp/t5/popxl``, ``finetuning.py --config tiny --micro_batch_size 2``: 2 replicas x micro-batch
2 x 2 heads per replica x 512 x 512, float16), random normal values. Each line prints the median
wall and CPU milliseconds of ``--repeat`` calls (one unmeasured call first):

* ``softmax, numpy float16 steps``: max, subtract, exp, sum and divide in float16, what the
  simulator computed before;
* ``softmax, float32 steps``: :func:`profcompare.emulator.popxl.float16_math.softmax_half`, the
  same bits with one conversion to float32;
* ``add``, ``matmul (scores @ v)``: numpy's float16 add, and the float16 matmul as the
  executor runs it (operands converted to float32, the product rounded to float16);
* ``... through torch`` (when torch is installed; the benchmark imports it, as a profiled program
  that uses torch does): the same kernels as the executor runs them with
  :mod:`profcompare.emulator.popxl.float16_torch` (torch in one thread), the same bits (``add``, the matmul's casts, the
  softmax's casts, GELU and its gradient); ``GELU, numpy float16 steps`` and ``GELU gradient, numpy
  float16 steps`` are the executor's GELU with ``PROFCOMPARE_SIM_TORCH=0``;
* each of the first ones again ``by replica`` (:func:`profcompare.emulator.popxl.replica_threads.by_replica`,
  with the threads ``PROFCOMPARE_SIM_THREADS`` asks for: run with ``PROFCOMPARE_SIM_THREADS=2``
  to see them; 1 by default). The executor does not split matmuls (numpy's BLAS has threads of
  its own); the line shows what splitting them would do.

CPU milliseconds count every thread of the process, so the threaded lines show what the
threads cost beside what they save in wall time. No figure is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import statistics
import time
from collections.abc import Callable, Iterator

import numpy as np

from profcompare.emulator.popxl import execution, float16_math, float16_torch, replica_threads


def _softmax_numpy(x: np.ndarray) -> np.ndarray:
    e = x - x.max(axis=-1, keepdims=True)
    np.exp(e, out=e)
    e /= e.sum(axis=-1, keepdims=True)
    return e


def _matmul_half(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.matmul(x.astype(np.float32), y.astype(np.float32)).astype(np.float16)


def _matmul_executor(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return float16_torch.astype(np.matmul(float16_torch.astype(x, np.float32), float16_torch.astype(y, np.float32)),
                                np.float16)


@contextlib.contextmanager
def _numpy_only() -> Iterator[None]:
    """float16_torch off while the block runs."""
    old = os.environ.get(float16_torch.ENV_VAR)
    os.environ[float16_torch.ENV_VAR] = "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ[float16_torch.ENV_VAR]
        else:
            os.environ[float16_torch.ENV_VAR] = old


def _without_torch(fn: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        with _numpy_only():
            return fn()
    return run


def _one_thread(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` with torch's kernels in one thread, as the executor runs them."""
    def run() -> object:
        with float16_torch.one_thread():
            return fn()
    return run


def _time(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    fn()
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--shape", default="2,2,2,512,512", help="the score tensor, replicas first")
    args = parser.parse_args(argv)
    shape = tuple(int(d) for d in args.shape.split(","))
    rng = np.random.default_rng(0)
    scores = rng.standard_normal(shape).astype(np.float16)
    values = rng.standard_normal((*shape[:-1], 16)).astype(np.float16)
    numpy_cases: list[tuple[str, Callable[[], object]]] = [
        ("softmax, numpy float16 steps", lambda: _softmax_numpy(scores)),
        ("softmax, float32 steps", lambda: float16_math.softmax_half(scores, -1)),
        ("softmax, float32 steps, by replica",
         lambda: replica_threads.by_replica(lambda x: float16_math.softmax_half(x, -1), scores)),
        ("add", lambda: scores + scores),
        ("add, by replica", lambda: replica_threads.by_replica(np.add, scores, scores)),
        ("matmul (scores @ v)", lambda: _matmul_half(scores, values)),
        ("matmul (scores @ v), by replica", lambda: replica_threads.by_replica(_matmul_half, scores, values)),
        ("GELU, numpy float16 steps", lambda: execution.gelu_tanh(scores)),
        ("GELU gradient, numpy float16 steps", lambda: execution.gelu_tanh_grad(scores)),
    ]
    cases = [(name, _without_torch(fn)) for name, fn in numpy_cases]
    if importlib.util.find_spec("torch") is not None:
        import torch  # noqa: F401  (float16_torch uses torch once a program has imported it)
        torch_cases: list[tuple[str, Callable[[], object]]] = [
            ("softmax, float32 steps, through torch", lambda: float16_math.softmax_half(scores, -1)),
            ("add, through torch", lambda: float16_torch.add(scores, scores)),
            ("matmul (scores @ v), through torch", lambda: _matmul_executor(scores, values)),
            ("GELU, through torch", lambda: execution.gelu_tanh(scores)),
            ("GELU gradient, through torch", lambda: execution.gelu_tanh_grad(scores)),
        ]
        cases += [(name, _one_thread(fn)) for name, fn in torch_cases]
    else:
        print("torch is not installed: no lines through torch")
    print(f"{'x'.join(map(str, shape))} float16, {replica_threads.thread_count()} thread(s) by replica, "
          f"median of {args.repeat}")
    for name, fn in cases:
        wall, cpu = _time(fn, args.repeat)
        print(f"{name:40s} {wall:8.1f} ms wall {cpu:8.1f} ms CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
