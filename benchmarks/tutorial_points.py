"""Run the popxl tutorials' own programs as the public timing points.

Each tutorial of profcompare.emulator.compile.calibration.PUBLIC_POINTS (the remote-variables and
phased-execution tutorials) has its ``mnist.py`` run once, unmodified, in its own directory, under
``profcompare profile --backend sim`` with the configuration its notebook printed timings for;
each point takes the report of its Session (training first, inference second, as the programs
create them) and reads the time per run and the components of the time
(calibration.components_of_report).

The programs read MNIST through torchvision from ``~/.torch/datasets`` (downloading it when
absent). Where MNIST is not there, the programs run with a HOME of their own holding a synthetic
MNIST of MNIST's shapes (workloads.data.write_synthetic_idx; a time per run does not depend on the
data's values) of a few global batches, so no download is tried and training takes seconds.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from profcompare.emulator.compile.calibration import (  # noqa: E402
    PUBLIC_POINTS,
    PointComponents,
    PublicPoint,
    components_of_report,
)
from profcompare.emulator.targets import MK2  # noqa: E402
from profcompare.errors import ProfcompareError  # noqa: E402

#: where a tutorial directory sits in a checkout: graphcore/examples, graphcore/tutorials, or the
#: popxl tutorials' directory itself
LAYOUTS = ("tutorials/tutorials/popxl", "tutorials/popxl", ".")
#: synthetic MNIST samples per split: two global batches of the largest training point, two test batches
SYNTHETIC_SAMPLES = {"train": 2 * 4 * 4 * 8, "test": 2 * 80}


@dataclass(frozen=True)
class PointRun:
    """One public point as run: the report's time per run and its components."""

    point: PublicPoint
    report_path: Path
    seconds: float  # the report's time per session.run (summary seconds_per_step)
    components: PointComponents


def tutorial_dir(checkout: Path, tutorial: str) -> Path:
    """The directory of ``tutorial`` in ``checkout`` (any of :data:`LAYOUTS`)."""
    for layout in LAYOUTS:
        candidate = checkout / layout / tutorial
        if (candidate / "mnist.py").is_file():
            return candidate
    raise ProfcompareError(f"{checkout}: no {tutorial}/mnist.py under {', '.join(LAYOUTS)} "
                           "(give a graphcore/examples checkout)")


def _has_mnist(home: Path) -> bool:
    raw = home / ".torch" / "datasets" / "MNIST" / "raw"
    return all((raw / n).is_file() for n in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                            "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"))


def program_env(scratch: Path) -> tuple[dict[str, str], str]:
    """The environment the programs run in, and where their MNIST comes from."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH", "")])])
    if _has_mnist(Path.home()):
        return env, f"MNIST in {Path.home() / '.torch' / 'datasets'}"
    from workloads.data import write_synthetic_idx

    home = scratch / "home"
    write_synthetic_idx(home / ".torch" / "datasets", SYNTHETIC_SAMPLES)
    env["HOME"] = str(home)
    env["PYTHONUSERBASE"] = site.getuserbase()  # packages installed for the user stay importable
    return env, f"synthetic MNIST of MNIST's shapes ({SYNTHETIC_SAMPLES['train']} training, " \
                f"{SYNTHETIC_SAMPLES['test']} test samples)"


def run_points(checkout: Path, out: Path | None = None, log=print) -> list[PointRun]:
    """Run every tutorial of the public points under the simulator and read each point's report."""
    from profcompare.readers import open_report

    dirs = {p.tutorial: tutorial_dir(checkout, p.tutorial) for p in PUBLIC_POINTS}
    with tempfile.TemporaryDirectory(prefix="public-points-") as scratch_name:
        scratch = Path(scratch_name)
        runs_dir = (out or scratch / "runs").resolve()
        env, data = program_env(scratch)
        log(f"data: {data}")
        runs: list[PointRun] = []
        for tutorial, directory in dirs.items():
            args = next(p.args for p in PUBLIC_POINTS if p.tutorial == tutorial)
            cmd = [sys.executable, "-m", "profcompare", "profile", "--backend", "sim", "-q", "--out", str(runs_dir),
                   "--name", tutorial, "--force", "mnist.py", *args]
            log(f"running {tutorial}/mnist.py {' '.join(args)}")
            done = subprocess.run(cmd, cwd=directory, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                tail = [line for line in done.stderr.splitlines() if line.strip()][-1:] or ["(no output)"]
                raise ProfcompareError(f"{tutorial}/mnist.py failed under the simulator (exit {done.returncode}): "
                                       f"{tail[0]}")
            for p in (q for q in PUBLIC_POINTS if q.tutorial == tutorial):
                path = runs_dir / tutorial / "mnist" / f"session-{p.session}" / "profile.sqlite"
                if not path.is_file():
                    raise ProfcompareError(f"{p.key}: {tutorial}/mnist.py left no Session {p.session} report")
                report = open_report(path)
                if report.meta.target.num_replicas != p.replicas:
                    raise ProfcompareError(f"{p.key}: Session {p.session} has {report.meta.target.num_replicas} "
                                           f"replicas, the point's session has {p.replicas}")
                seconds = float(report.summary()["seconds_per_step"])
                components = components_of_report(p.key, report, MK2)
                modelled = components.seconds(MK2.run_overhead_seconds, MK2.remote_transfer_seconds)
                if abs(modelled - seconds) > 1e-9 * seconds:
                    raise ProfcompareError(f"{p.key}: the components give {modelled * 1e3:.6f} ms, the report "
                                           f"{seconds * 1e3:.6f} ms")
                runs.append(PointRun(p, path, seconds, components))
    return sorted(runs, key=lambda r: PUBLIC_POINTS.index(r.point))
