"""The compile model's code sizes against the public reports that give them (ipu_facts.md 3).

    python benchmarks/code_anchors.py

Builds the programs of the reports with published code figures and prints, per figure, the
published value, the model's and the error (model / published - 1):

- Poplar tut4 (Mk2, facts 3 item 3; Operations tab): two matmuls m4 = m1 @ m2 (800x500 @ 500x400)
  and m5 = m4 @ m3 (400x200), fp32; code of each matmul and the whole program's code.
- Mk1 TF "adder" (facts 2.3 and 3 item 4): an element-wise add of two host-loaded tensors spread
  over all 1216 tiles (1219 vertices), its result streamed back: control, vertex and exchange code.
"""

from __future__ import annotations

import sys

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.synthetic import ProgramBuilder
from profcompare.emulator.targets import MK1, MK2


def tut4_program():
    b = ProgramBuilder()
    m1 = b.variable("m1", (800, 500))
    m2 = b.variable("m2", (500, 400))
    m3 = b.variable("m3", (400, 200))
    (m4,) = b.op("MatMul", [m1, m2], [("m4", (800, 400), "float32")], flops=2 * 800 * 500 * 400, name="matMul m4")
    b.op("MatMul", [m4, m3], [("m5", (800, 200), "float32")], flops=2 * 800 * 400 * 200, name="matMul m5")
    return b.build()


def adder_program(tiles: int = 1216):
    b = ProgramBuilder()
    n = tiles * 32  # 128 B of fp32 per tile: one vertex per tile, as the report's 1219 vertices
    (x,) = b.op("HostLoad", [], [("x", (n,), "float32")], attrs={"stream": "x"}, name="load_x")
    (y,) = b.op("HostLoad", [], [("y", (n,), "float32")], attrs={"stream": "y"}, name="load_y")
    (z,) = b.op("Add", [x, y], [("z", (n,), "float32")], flops=n, name="add")
    b.op("HostStore", [z], attrs={"stream": "z"}, name="store_z")
    return b.build()


def main() -> int:
    rows = []
    tut4 = compile_program(tut4_program(), MK2).report
    # tut4's variables are created with initial values: no WeightsFromHost program, so its host
    # exchange code is left out; its Operations tab puts almost all code on the two matmuls
    # (2,478,508 + 1,260,080 B of 3.6 MiB), codelets included, so only the total compares
    cats4 = tut4.categories.set_index("category")["bytes"]
    code_cats = tut4.categories.loc[tut4.categories["group"].astype(str) == "code", "category"].astype(str)
    total = int(sum(int(cats4[c]) for c in code_cats if c != "hostExchangeCode"))
    rows.append(("tut4 (Mk2) total code", int(3.6 * 2**20), total))
    adder = compile_program(adder_program(), MK1).report
    cats = adder.categories.set_index("category")["bytes"]
    for cat, published in (("controlCode", 851_272), ("vertexCode", 170_788), ("internalExchangeCode", 60_792),
                           ("hostExchangeCode", 351_328)):
        rows.append((f"Mk1 adder {cat}", published, int(cats.get(cat, 0))))
    print("| published figure | published | model | error |")
    print("|---|---|---|---|")
    for label, published, model in rows:
        print(f"| {label} | {published:,} B | {model:,} B | {model / published - 1:+.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
