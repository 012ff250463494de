"""Compile-only execution: the executor of a Session that computes no values.

A Session runs its Ir through one of two executors with the same interface
(:class:`ProgramExecutor`), picked by the execution mode (``profcompare.backend.execution_mode``):

- numeric (:class:`profcompare.emulator.popxl.execution.Executor` over a ``DeviceState``): every
  op runs as a numpy kernel on ``(replicas, *shape)`` arrays, so training really trains;
- abstract (:class:`AbstractExecutor`, this module): shapes and dtypes only. No device memory is
  allocated, no kernel is built or called; a run reads nothing and leaves the host output
  arrays as they are (zeros).

Lowering and the compile model (engine, tile mapping, liveness, cycles) read the Ir, never
values, so the report is the same whichever executor ran. The abstract executor still refuses
what the numeric one refuses for the program's structure (a remote variable used without
``remote_load``), so a program that compiles compile-only also runs numerically.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .tensor import Variable

if TYPE_CHECKING:
    from .ir import Ir


class ProgramExecutor(Protocol):
    """What a Session runs its main program with."""

    def run(self, inputs: list[Any], outputs: list[np.ndarray]) -> None:
        """One run of the main program: ``inputs`` per h2d stream ``(T, R, *shape)`` (None in
        compile-only runs), ``outputs`` per d2h stream ``(T, R, *shape)``, written in place."""


class AbstractExecutor:
    """Runs nothing: the compile-only executor (see the module docstring)."""

    def __init__(self, ir: Ir) -> None:
        self.ir = ir
        #: runs of the main program so far
        self.runs = 0
        _check_remote_variables_loaded(ir)

    def run(self, inputs: list[Any], outputs: list[np.ndarray]) -> None:
        """Count the run; ``outputs`` keep their zeros (no value is computed)."""
        self.runs += 1


def _check_remote_variables_loaded(ir: Ir) -> None:
    """ValueError when an op consumes a remote variable directly (numeric execution's rule;
    variables live in the main graph, so only its ops can)."""
    for op in ir.main_graph._ops:
        for t in op.inputs:
            if isinstance(t, Variable) and t._remote_buffer is not None:
                raise ValueError(f"remote variable {t.id} lives in Streaming Memory; load it with "
                                 "ops.remote_load before using it")


__all__ = ["AbstractExecutor", "ProgramExecutor"]
