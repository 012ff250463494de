"""Set-up cost of a newcomer's ``make run`` and ``make test``, from a fresh clone.

Usage::

    python benchmarks/bench_setup.py [--cold-cache] [--skip-run] [--keep]

Clones this checkout's committed HEAD (``git clone``; uncommitted changes are not measured) into
a temporary directory twice and measures, with the Python on PATH (``python3``, as the Makefile
uses) and pip configured as on this machine:

* clone A, ``make run``: its set-up (``make .venv/.installed``: create the virtual environment,
  ``pip install -e .``) and then the run itself (``make run``, set-up already done:
  ``profcompare run onchip offchip-sharded`` on the simulator), each timed;
* clone A, then ``make test``'s extra set-up (``make .venv/.installed-dev``: the test tools);
* clone B, ``make test``'s set-up alone (``make .venv/.installed-dev`` in a fresh clone).

Each figure is wall time (``time.perf_counter`` around the ``make`` process) and the CPU time of
the ``make`` process and everything it ran (``resource.getrusage(RUSAGE_CHILDREN)``, user +
system). It also prints the installed distributions and the size of each ``.venv``.

By default pip uses its cache as it is (warm when these packages were installed before: no
download, wheels reused); ``--cold-cache`` points ``PIP_CACHE_DIR`` at an empty directory (pip
then fetches every package again from its index or ``find-links``; the network is part of the
figure). The output says which.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Run ``command`` in ``cwd``; return (wall seconds, CPU seconds of it and its children)."""
    cpu = _cpu_children()
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"`{' '.join(command)}` in {cwd} exited with {result.returncode}:\n{tail}")
    return wall, _cpu_children() - cpu


def _venv_facts(clone: Path) -> str:
    python = clone / ".venv" / "bin" / "python"
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                            check=False).stdout.split()
    size = sum(f.stat().st_size for f in (clone / ".venv").rglob("*") if f.is_file() and not f.is_symlink())
    names = {line.split("==")[0].lower() for line in listed}
    tools = sorted(names & {"pytest", "hypothesis", "playwright", "nbclient", "ipykernel", "jupyter-client"})
    return (f"{len(listed)} distributions, {size / 2**20:.0f} MiB; test tools present: "
            f"{', '.join(tools) if tools else 'none'}")


def _clone(into: Path) -> None:
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(into)], check=True)


def _line(label: str, wall: float, cpu: float) -> None:
    print(f"  {label:<52} wall {wall:6.1f} s   cpu {cpu:6.1f} s")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 0, or 1 when a step fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold-cache", action="store_true", help="give pip an empty cache directory")
    parser.add_argument("--skip-run", action="store_true", help="time the set-ups only, not the run")
    parser.add_argument("--keep", action="store_true", help="keep the clones and print where they are")
    args = parser.parse_args(argv)
    if shutil.which("make") is None or shutil.which("git") is None:
        print("bench_setup: error: needs make and git on PATH", file=sys.stderr)
        return 1
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=False).stdout.strip()
    python = shutil.which("python3") or "python3"
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                             text=True, check=False).stdout.strip()
    tmp = Path(tempfile.mkdtemp(prefix="pc-bench-setup-"))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "POPLAR_ENGINE_OPTIONS")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's Python writes its bytecode cache
    if args.cold_cache:
        env["PIP_CACHE_DIR"] = str(tmp / "pip-cache")
        cache = f"cold (empty PIP_CACHE_DIR {env['PIP_CACHE_DIR']}: every package fetched again)"
    else:
        cache = "warm (pip's cache as it is on this machine: packages installed before are not downloaded again)"
    print(f"fresh clones of {ROOT} at {head}, python3 {version} ({python}), {os.cpu_count()} CPU(s)")
    print(f"pip cache: {cache}")
    print("wall = time.perf_counter() around `make`; cpu = user + system of make and all it ran "
          "(getrusage RUSAGE_CHILDREN)")
    try:
        clone_a, clone_b = tmp / "a", tmp / "b"
        _clone(clone_a)
        _clone(clone_b)
        print("make run (clone A):")
        setup = _timed(["make", ".venv/.installed"], clone_a, env)
        _line("set-up: venv + pip install -e .", *setup)
        if not args.skip_run:
            ran = _timed(["make", "run", "ARGS=--backend sim -q"], clone_a, env)
            _line("the run (profcompare run onchip offchip-sharded)", *ran)
            _line("make run in all", setup[0] + ran[0], setup[1] + ran[1])
        print(f"  .venv: {_venv_facts(clone_a)}")
        print("make test after make run (clone A):")
        extra = _timed(["make", ".venv/.installed-dev"], clone_a, env)
        _line("added set-up: pip install -e '.[dev]'", *extra)
        print("make test alone (clone B):")
        dev = _timed(["make", ".venv/.installed-dev"], clone_b, env)
        _line("set-up: venv + pip install -e '.[dev]'", *dev)
        print(f"  .venv: {_venv_facts(clone_b)}")
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"bench_setup: error: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"clones kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
