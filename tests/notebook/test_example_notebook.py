"""examples/compare_variants.ipynb runs headless from top to bottom, so the example cannot rot."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "compare_variants.ipynb"


def _kernel_missing() -> str | None:
    for module in ("nbclient", "nbformat", "ipykernel"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[dev]')"
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        return "no 'python3' Jupyter kernel is registered (python -m ipykernel install --user)"
    return None


@pytest.mark.slow
def test_example_notebook_executes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = _kernel_missing()
    if reason:
        pytest.skip(reason)
    # the kernel (and the processes it starts) import this checkout, whatever is installed
    root = str(NOTEBOOK.parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p))
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(notebook, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(tmp_path)}})
    client.execute()

    outputs = {i: cell.get("outputs", []) for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"}
    assert not [o for cell in outputs.values() for o in cell if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for cell in outputs.values() for o in cell if o.get("output_type") == "stream")
    assert "onchip" in text and "offchip-sharded" in text and " ok " in text
    # the summary, ledger, ledger diff, ledger moves and variables DataFrames and the three figures
    rich = [o for cell in outputs.values() for o in cell if o.get("output_type") in ("execute_result", "display_data")]
    assert sum("text/html" in o.get("data", {}) for o in rich) >= 5
    assert sum("image/png" in o.get("data", {}) or "image/svg+xml" in o.get("data", {}) for o in rich) >= 3
    sources = {i: "".join(cell.source) for i, cell in enumerate(notebook.cells)}

    def shown(code: str) -> str:
        cell = next(i for i, s in sources.items() if s.strip() == code)
        return "".join(o.get("data", {}).get("text/plain", "") for o in outputs[cell])

    # the ledger of one report, the ledger diff, and the optimizer state's move to Streaming Memory
    assert "optimizer_state" in shown("base.ledger()") and "bytes_at_peak" in shown("base.ledger()")
    assert "delta_bytes" in shown("diff.ledger")
    moves = shown("diff.ledger_moves()")
    assert re.search(r"fc1\.weight\s+optimizer_state", moves) and "new_streaming_memory" in moves
    assert "Figure" in shown("diff.plot_ledger()")
    run_dir = tmp_path / "reports" / "notebook-example"
    assert (run_dir / "compare-onchip-vs-offchip-sharded.html").is_file()
    assert (run_dir / "onchip" / "run.json").is_file()
