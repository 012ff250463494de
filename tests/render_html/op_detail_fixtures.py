"""Hand-made reports of the op detail tests: op "matmul/1" (3 program steps, 1,000 code bytes,
500 cycles, 2,048 FLOPs), an op with a hostile name and, for a comparison, a second build."""

from __future__ import annotations

from profcompare.model import Report, ReportMeta, Target, operations_from_rows, programs_from_rows

#: an op name that would break out of a <script> block or bold text if it were spliced as HTML
HOSTILE_OP = "</script><b>x</b>"


def _meta(source: str) -> ReportMeta:
    return ReportMeta(source=source, format="store", producer="test", simulated=False,
                      target=Target("Mk2", num_ipus=1, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                    num_replicas=1, ipus_per_replica=1))


def op_report(*, code: int = 1000, cycles: int = 500, source: str = "base.pop") -> Report:
    """A report of two ops: matmul/1 (code ``code`` B, ``cycles`` cycles, 2,048 FLOPs, 3 program
    steps) and :data:`HOSTILE_OP` (one step)."""
    operations = operations_from_rows([
        ("matmul/1", "model/matmul", "MatMul", "popxl", 0, code, 300, 200, cycles, 2048, 4, "model.py:12",
         "fc.weight", "forward"),
        (HOSTILE_OP, "", "Add", "", 0, 40, 8, 0, 20, None, 2, "", "", ""),
    ])
    programs = programs_from_rows([
        (0, None, 0, "Sequence", "main", "", None),
        (1, 0, 1, "OnTileExecute", "matmul/1/Conv", "matmul/1", 0),
        (2, 0, 1, "DoExchange", "matmul/1/exchange", "matmul/1", 0),
        (3, 0, 1, "OnTileExecute", "add", HOSTILE_OP, 0),
        (4, 0, 1, "OnTileExecute", "matmul/1/Reduce", "matmul/1", 0),
    ])
    return Report.build(_meta(source), operations=operations, programs=programs)
