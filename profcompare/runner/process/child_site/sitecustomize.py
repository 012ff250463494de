"""Started by Python in every process of a program ``profcompare profile`` runs on the simulator.

``profile`` puts this directory first on ``PYTHONPATH`` and names the job directory in
``PROFCOMPARE_SIM_JOB_DIR``, so a Python process the program starts (``subprocess.run([
sys.executable, "train.py"])``, ``python3 -m pytest``, ...) resolves ``popxl`` and friends to the
simulator as the program itself does, and its Sessions report into the same job directory
(:func:`profcompare.runner.process.script_main.install_in_child`). A Python that cannot import profcompare is
left as it is. A ``sitecustomize`` later on the path (a distribution's own) is run after this one.
"""

from __future__ import annotations

import os


def _run_next_sitecustomize() -> None:
    import importlib.machinery
    import importlib.util
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


if os.environ.get("PROFCOMPARE_SIM_JOB_DIR"):
    try:
        from profcompare.runner.process.script_main import install_in_child
    except ImportError:
        pass
    else:
        install_in_child()
_run_next_sitecustomize()
