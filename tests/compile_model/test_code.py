"""Code outlining: a called graph's code and vertex state exist once however often it is called."""

from __future__ import annotations

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.synthetic import ProgramBuilder


def _program(calls: int, inline: bool = False):
    b = ProgramBuilder()
    g = b.graph("body")
    a = b.graph_input(g, "a", (64, 512))
    (h,) = b.op("Gelu", [a], [("h", (64, 512), "float32")], flops=8 * 64 * 512, graph=g, name="body/gelu")
    b.graph_output(g, h)
    (x,) = b.op("HostLoad", [], [("x", (64, 512), "float32")], attrs={"stream": "x"}, name="load")
    for i in range(calls):
        if inline:
            (x,) = b.op("Gelu", [x], [(f"h{i}", (64, 512), "float32")], flops=8 * 64 * 512, name=f"inline/gelu{i}")
        else:
            (x,) = b.call(g, [x])
    b.op("HostStore", [x], attrs={"stream": "y"}, name="store")
    return b.build()


def _cat(report, name):
    c = report.categories.set_index("category")["bytes"]
    return int(c.get(name, 0))


def test_calling_a_graph_twice_does_not_double_its_code():
    once = compile_program(_program(1)).report
    twice = compile_program(_program(2)).report
    assert (twice.liveness["program"] == "body/gelu").sum() == 2  # executed twice ...
    assert (twice.code["name"] == "body/gelu").sum() == 1  # ... compiled once
    assert _cat(twice, "vertexCode") == _cat(once, "vertexCode")
    assert _cat(twice, "vertexInstanceState") == _cat(once, "vertexInstanceState")
    def gelu_code_bytes(report):
        return int(report.code.loc[report.code["name"] == "body/gelu", "code_bytes"].sum())

    assert gelu_code_bytes(twice) == gelu_code_bytes(once) > 0


def test_inlining_twice_duplicates_vertex_state():
    outlined = compile_program(_program(2)).report
    inlined = compile_program(_program(2, inline=True)).report
    assert _cat(inlined, "vertexInstanceState") == 2 * _cat(compile_program(_program(1, inline=True)).report,
                                                          "vertexInstanceState")
    assert _cat(inlined, "vertexInstanceState") > _cat(outlined, "vertexInstanceState")


def test_code_table_sums_to_code_categories():
    report = compile_program(_program(2)).report
    code_total = int(report.code["code_bytes"].sum())
    assert code_total == int(report.summary()["code_bytes"])
