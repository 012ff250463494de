"""``profcompare profile --compile-only`` of an application, per process: the program's process
(build, lowering, compile, report write) and the ``profile`` process (waiting, then opening the
report and showing it).

Usage::

    python benchmarks/bench_profile_app.py --cwd EXAMPLES/nlp/gpt_j/popxl finetuning.py --config gptj_6B_1024_pod16
    python benchmarks/bench_profile_app.py --cwd EXAMPLES/nlp/t5/popxl finetuning.py --config xxl_pod16

Runs ``profcompare profile --compile-only --quiet SCRIPT ARGS`` once, in the application's
directory, into a temporary output root (``--out DIR`` keeps the run there instead), in a process that measures itself as it exits: its own
user and system CPU seconds and peak resident memory (``VmHWM``) are the ``profile`` process's;
those of the processes it waited for (``RUSAGE_CHILDREN``: the program's process) are the
program's. Prints both and the wall time. The report shown goes to a file in the temporary
directory (not printed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_large_reports import CHILD  # the measured child: its own and its children's CPU and peak

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cwd", required=True, help="the application's directory (the program runs there)")
    parser.add_argument("--out", default=None, help="output root to keep the run in (default: a temporary one)")
    parser.add_argument("script", help="the program, relative to --cwd")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the program's options")
    options = parser.parse_args(argv)
    env = dict(os.environ)
    env.pop("POPLAR_ENGINE_OPTIONS", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        out = os.path.abspath(options.out) if options.out else tmp
        read_end, write_end = os.pipe()
        command = [sys.executable, "-c", CHILD, str(write_end), "profile", "--compile-only", "--quiet", "--force",
                   "--out", out, "--name", "run", options.script, *options.args]
        start = time.perf_counter()
        with open(Path(tmp) / "shown.txt", "wb") as shown:
            proc = subprocess.run(command, cwd=options.cwd, env=env, stdout=shown, stderr=subprocess.PIPE,
                                  pass_fds=(write_end,), check=False)
        wall = time.perf_counter() - start
        os.close(write_end)
        with os.fdopen(read_end) as figures_file:
            text = figures_file.read()
    if proc.returncode != 0 or not text:
        sys.stderr.write(proc.stderr.decode(errors="replace")[-2000:])
        print(f"profile exited with status {proc.returncode}", file=sys.stderr)
        return 1
    figures = json.loads(text)
    print(f"wall: {wall:.1f} s")
    for name in ("program", "profile"):
        f = figures[name]
        print(f"{name + ' process:':17} {f['user']:6.1f} s user  {f['system']:5.1f} s system  "
              f"peak {f['peak'] / 2**30:.2f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
