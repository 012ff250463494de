"""Solve the time model's two fitted constants (docs/ipu-model.md "Calibration").

    python benchmarks/calibrate_time.py

Fits ``run_overhead_seconds`` on the remote-variables tutorial's inference session (0.8002 ms
per run) and then ``remote_transfer_seconds`` on its off-chip sharded training session
(3.3694 ms per run); prints both with the figures they come from. The values in
profcompare/emulator/targets.py (FITTED_*) are this script's output, and a test re-solves them.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from programs import point_program  # noqa: E402

from profcompare.emulator.compile.calibration import PUBLIC_POINTS, fit_constants  # noqa: E402


def main() -> int:
    fit = fit_constants(point_program(PUBLIC_POINTS[0]), point_program(PUBLIC_POINTS[1]))
    print(f"inference program, device time:            {fit.inference_device_seconds * 1e3:.4f} ms")
    print(f"  published per run:                       {PUBLIC_POINTS[0].seconds * 1e3:.4f} ms")
    print(f"run_overhead_seconds (fit 1 of 2):         {fit.run_overhead_seconds:.4e} s")
    print(f"training program without transfer costs:   {fit.training_seconds_without_transfers * 1e3:.4f} ms")
    print(f"  remote transfers per run:                {fit.remote_transfers_per_run}")
    print(f"  published per run:                       {PUBLIC_POINTS[1].seconds * 1e3:.4f} ms")
    print(f"remote_transfer_seconds (fit 2 of 2):      {fit.remote_transfer_seconds:.4e} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
