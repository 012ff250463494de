"""Run Graphcore's published popxl programs unmodified under ``profcompare profile`` and count
what runs: the figures docs/compatibility.md and the README quote come from this script.

    python tools/public_programs.py --user-guide ~/popart/docs/popxl/files \\
        --tutorials ~/examples/tutorials/tutorials/popxl --addons ~/popxl-addons

Nothing of those repositories is part of this project: point the options at your own checkouts
(graphcore/popart for the user guide's example files, graphcore/examples for the popxl
tutorials, graphcore/popxl-addons for its tests). Each program runs in its own directory, as
its own tests run it, with the arguments those tests pass; a notebook runs as its code cells
in order (IPython ``%``/``!`` lines dropped). The MNIST programs need torch, torchvision and the
MNIST files (``--datasets-dir``) importable by the Python that runs profcompare; a missing
package is reported as that program's failure, like any other.

Every program is one ``profcompare profile`` run; a program passes when that exits 0 (it ran
and wrote at least one report). popxl-addons' tests run as one ``-m pytest`` and are counted
from pytest's summary line.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

# Programs of the PopXL user guide (popart docs/popxl/files) that are modules of another example
# rather than programs.
USER_GUIDE_MODULES = frozenset({"mnist_utils.py", "leaky_relu_op.py"})
# Arguments the user guide's own tests pass (tests/test_popxl_doc_examples.py); {datasets} is
# --datasets-dir.
USER_GUIDE_ARGS = {
    "mnist.py": ["--datasets-dir={datasets}", "--test-batch-size", "8", "--limit-nbatches", "2"],
    "mnist_rts.py": ["--datasets-dir={datasets}", "--replication-factor", "2", "--rts", "--test",
                     "--test-batch-size", "8", "--limit-nbatches", "2"],
}
_PYTEST_COUNTS = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")


@dataclass(frozen=True)
class Program:
    """One program to run: a display name, the directory it runs in and its command line
    (``script`` may be ``-m`` and a module)."""

    suite: str
    name: str
    cwd: Path
    argv: tuple[str, ...]
    problem: str = ""  # why it cannot be run at all (an unreadable notebook), else empty


@dataclass(frozen=True)
class Outcome:
    """How a program ended: ``exit_code`` of ``profcompare profile``, wall seconds, and the
    failure line profcompare printed (empty when it passed)."""

    program: Program
    exit_code: int
    seconds: float
    message: str
    log: str

    @property
    def passed(self) -> bool:
        """True when ``profcompare profile`` exited 0."""
        return self.exit_code == 0


def notebook_script(notebook: Path, directory: Path) -> Path:
    """Write the code cells of ``notebook`` (in order, IPython magics and shell lines dropped)
    to a new ``.py`` file in ``directory`` and return its path."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    parts = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", []))
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
        parts.append("\n".join(lines))
    target = directory / f"{notebook.parent.name}__{notebook.stem}.py"
    target.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    return target


def user_guide_programs(directory: Path, datasets: str) -> Iterator[Program]:
    """Every example program of the PopXL user guide's files directory."""
    for script in sorted(directory.glob("*.py")):
        if script.name in USER_GUIDE_MODULES:
            continue
        args = [a.format(datasets=datasets) for a in USER_GUIDE_ARGS.get(script.name, [])]
        yield Program("user guide", script.name, directory, (script.name, *args))


def tutorial_programs(directory: Path, scratch: Path) -> Iterator[Program]:
    """Every tutorial's programs (``mnist.py``, ``mnist_template.py``) and notebooks."""
    for tutorial in sorted(p for p in directory.iterdir() if p.is_dir()):
        for script in sorted(tutorial.glob("*.py")):
            yield Program("tutorials", f"{tutorial.name}/{script.name}", tutorial, (script.name,))
        for notebook in sorted(tutorial.glob("*.ipynb")):
            name = f"{tutorial.name}/{notebook.name}"
            try:
                script = notebook_script(notebook, scratch)
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                yield Program("tutorials", name, tutorial, (), problem=f"not a readable notebook ({exc})")
                continue
            yield Program("tutorials", name, tutorial, (str(script),))


def run_program(program: Program, out: Path, profcompare: Sequence[str], timeout: float) -> Outcome:
    """Run one program under ``profcompare profile`` and return how it ended (exit code 2
    without running when the program could not be prepared)."""
    if program.problem:
        return Outcome(program, 2, 0.0, f"{program.name}: {program.problem}", "")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", program.name)
    command = [*profcompare, "profile", "--out", str(out), "--name", name, "--force", *program.argv]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=program.cwd, capture_output=True, text=True, timeout=timeout)
        code, stderr = done.returncode, done.stderr
    except subprocess.TimeoutExpired:
        code, stderr = 124, f"profcompare: {program.name}: timed out after {timeout:.0f} s"
    seconds = time.perf_counter() - start
    lines = [line for line in stderr.splitlines() if line.startswith("profcompare:")]
    logs = sorted((out / name).glob("*/run.log"))
    log = logs[-1].read_text(encoding="utf-8", errors="replace") if logs else ""
    return Outcome(program, code, seconds, lines[-1] if (lines and code) else "", log)


def pytest_counts(log: str) -> dict[str, int]:
    """pytest's final counts (passed, failed, error, skipped, ...) from its output."""
    summary = [line for line in log.splitlines() if re.search(r"\d+ (passed|failed|errors?)", line)]
    if not summary:
        return {}
    return {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
            for n, kind in _PYTEST_COUNTS.findall(summary[-1])}


def report(outcomes: Sequence[Outcome], addons: dict[str, int] | None) -> str:
    """The table of programs and the totals per suite, as text."""
    lines = []
    width = max((len(o.program.name) for o in outcomes), default=10)
    for o in outcomes:
        status = "ok" if o.passed else f"exit {o.exit_code}"
        lines.append(f"{o.program.suite:<11} {o.program.name:<{width}} {status:<8} {o.seconds:7.1f} s"
                     + (f"  {o.message}" if o.message else ""))
    lines.append("")
    for suite in dict.fromkeys(o.program.suite for o in outcomes):
        mine = [o for o in outcomes if o.program.suite == suite]
        lines.append(f"{suite}: {sum(o.passed for o in mine)} of {len(mine)} programs run")
    if addons is not None:
        counts = ", ".join(f"{n} {kind}" for kind, n in addons.items()) or "no pytest summary"
        lines.append(f"popxl-addons tests: {counts}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suites given on the command line and print the table; 0 once every program was
    tried (a program's own failure is counted, not an error of this script), 2 for bad options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--user-guide", type=Path, help="popart's docs/popxl/files directory")
    parser.add_argument("--tutorials", type=Path, help="graphcore/examples tutorials/tutorials/popxl")
    parser.add_argument("--addons", type=Path, help="a popxl-addons checkout (runs its tests/)")
    parser.add_argument("--datasets-dir", default="~/.torch/datasets", help="MNIST for the user guide's MNIST programs")
    parser.add_argument("--out", type=Path, default=None, help="where the runs go (default: a temporary directory)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per program")
    args = parser.parse_args(argv)
    if not (args.user_guide or args.tutorials or args.addons):
        parser.error("give at least one of --user-guide, --tutorials, --addons")
    for option in ("user_guide", "tutorials", "addons"):
        path = getattr(args, option)
        if path is not None and not path.is_dir():
            parser.error(f"--{option.replace('_', '-')} {path}: not a directory")
    profcompare = [sys.executable, "-m", "profcompare"]
    with tempfile.TemporaryDirectory(prefix="public-programs-") as scratch_name:
        scratch = Path(scratch_name)
        out = (args.out or scratch / "runs").resolve()
        programs: list[Program] = []
        if args.user_guide:
            programs += user_guide_programs(args.user_guide.resolve(), args.datasets_dir)
        if args.tutorials:
            programs += tutorial_programs(args.tutorials.resolve(), scratch)
        outcomes = []
        for program in programs:
            outcomes.append(run_program(program, out, profcompare, args.timeout))
            print(f"{program.suite}: {program.name}: {'ok' if outcomes[-1].passed else 'failed'}",
                  file=sys.stderr, flush=True)
        addons = None
        if args.addons:
            tests = Program("addons", "popxl-addons tests", args.addons.resolve(),
                            ("-m", "pytest", "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors", "tests"))
            addons = pytest_counts(run_program(tests, out, profcompare, args.timeout * 4).log)
        print(report(outcomes, addons))
    return 0


if __name__ == "__main__":
    sys.exit(main())
