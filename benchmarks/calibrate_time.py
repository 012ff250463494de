"""Solve the time model's two fitted constants (docs/ipu-model.md "Calibration").

    python benchmarks/calibrate_time.py --tutorials PATH [--record]
    python benchmarks/calibrate_time.py                    # from the recorded components

PATH is a graphcore/examples checkout: the remote-variables and phased-execution tutorials'
own ``mnist.py`` run unmodified under ``profcompare profile --backend sim`` at their notebooks'
configurations (benchmarks/tutorial_points.py). Fits ``run_overhead_seconds`` on the
remote-variables tutorial's inference session (0.8002 ms per run) and then
``remote_transfer_seconds`` on its off-chip sharded training session (3.3694 ms per run); prints
both with the figures they come from, how far each moved from the model's value
(profcompare/emulator/targets.py FITTED_*), and every public point with the fitted values.

``--record`` writes each point's components (device cycles without the fitted terms, remote
transfers per run, the opening wait: calibration.PointComponents) to benchmarks/public_points.json,
from which a test re-solves the constants without the checkout. Without ``--tutorials`` the fit is
made from that record.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
RECORD = Path(__file__).resolve().parent / "public_points.json"

from profcompare.emulator.compile.calibration import (  # noqa: E402
    PUBLIC_POINTS,
    components_from_json,
    components_to_json,
    fidelity,
    fit_constants,
    point,
)
from profcompare.emulator.targets import MK2  # noqa: E402
from profcompare.errors import ProfcompareError  # noqa: E402


def _moved(old: float, new: float) -> str:
    return f"{(new / old - 1) * 100:+.2f}% from the model's {old:.4e} s"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tutorials", type=Path, help="a graphcore/examples checkout (the popxl tutorials' programs)")
    parser.add_argument("--out", type=Path, help="keep the tutorials' runs here (default: a temporary directory)")
    parser.add_argument("--record", action="store_true", help=f"write the points' components to {RECORD.name}")
    args = parser.parse_args(argv)
    if args.record and args.tutorials is None:
        print("calibrate_time: --record needs --tutorials: the record comes from the tutorials' runs", file=sys.stderr)
        return 2
    try:
        if args.tutorials is None:
            components = components_from_json(RECORD.read_text(encoding="utf-8"))
            print(f"(from the recorded components in {RECORD.name}; give --tutorials PATH to run the programs)")
        else:
            if not args.tutorials.is_dir():
                raise ProfcompareError(f"--tutorials {args.tutorials}: not a directory")
            from tutorial_points import run_points

            runs = run_points(args.tutorials.resolve(), args.out, log=lambda s: print(s, file=sys.stderr))
            components = {r.point.key: r.components for r in runs}
        fit = fit_constants(components["rts-inference"], components["rts-train"])
    except (OSError, KeyError, ProfcompareError) as exc:
        print(f"calibrate_time: {exc}", file=sys.stderr)
        return 2
    inf, train = point("rts-inference"), point("rts-train")
    print(f"inference program, device time:            {fit.inference_device_seconds * 1e3:.4f} ms")
    print(f"  published per run:                       {inf.seconds * 1e3:.4f} ms")
    print(f"run_overhead_seconds (fit 1 of 2):         {fit.run_overhead_seconds:.4e} s "
          f"({_moved(MK2.run_overhead_seconds, fit.run_overhead_seconds)})")
    print(f"training program without transfer costs:   {fit.training_seconds_without_transfers * 1e3:.4f} ms")
    print(f"  remote exchanges per run:                {fit.remote_exchanges_per_run}")
    print(f"  published per run:                       {train.seconds * 1e3:.4f} ms")
    print(f"remote_transfer_seconds (fit 2 of 2):      {fit.remote_transfer_seconds:.4e} s "
          f"({_moved(MK2.remote_transfer_seconds, fit.remote_transfer_seconds)})")
    print()
    fitted = MK2.replace(run_overhead_seconds=fit.run_overhead_seconds, remote_transfer_seconds=fit.remote_transfer_seconds)
    print("with the fitted values:")
    for row in fidelity(components, fitted):
        c = components[row.point.key]
        print(f"  {row.point.key:<17} {row.modelled_seconds * 1e3:.4f} ms against {row.point.seconds * 1e3:.4f} ms "
              f"({row.error * 100:+.1f}%, {'fitted' if row.point.fitted else 'validated'}; "
              f"{c.remote_exchanges} remote exchanges)")
    if args.record:
        text = components_to_json([components[p.key] for p in PUBLIC_POINTS],
                                  "python benchmarks/calibrate_time.py --tutorials PATH --record")
        tmp = RECORD.with_name(RECORD.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(RECORD)
        print(f"wrote {RECORD}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
