"""Command-line start-up time: ``profcompare --help`` and ``profcompare show REPORT``.

    python benchmarks/bench_startup.py [--repeat 7]

Each command runs as a fresh process (what a user waits for); the script prints the median,
minimum and maximum wall time of each. Heavy libraries (pandas, matplotlib, the emulator) are
imported only by the commands that need them: ``--help`` imports none of them, ``show``
pandas but not matplotlib. Targets: ``--help`` < 0.3 s, ``show`` < 0.8 s.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent


def _time(args: list[str], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "profcompare", *args], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE.parent / "tests" / "cli"))
    from cli_sample_reports import build_report

    from profcompare.readers.store import write_report

    with tempfile.TemporaryDirectory() as tmp:
        report = write_report(build_report("onchip"), pathlib.Path(tmp) / "profile.sqlite")
        for label, command in (("--help", ["--help"]), ("show", ["show", str(report)])):
            times = _time(command, args.repeat)
            print(f"profcompare {label:7s} median {statistics.median(times):.3f} s "
                  f"(min {min(times):.3f}, max {max(times):.3f}, {args.repeat} runs)")


if __name__ == "__main__":
    main()
