"""Code outlining: a called graph's code and vertex state exist once however often it is called."""

from __future__ import annotations

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.synthetic import ProgramBuilder


def _program(calls: int, inline: bool = False, same_input: bool = True):
    """``calls`` executions of a GELU body; ``same_input`` feeds every call the loaded tensor (the
    graph input is then aliased, zero-copy), otherwise each call takes the previous one's output."""
    b = ProgramBuilder()
    g = b.graph("body")
    a = b.graph_input(g, "a", (64, 512))
    (h,) = b.op("Gelu", [a], [("h", (64, 512), "float32")], flops=8 * 64 * 512, graph=g, name="body/gelu")
    for k in (2, 3):
        (h,) = b.op("Gelu", [h], [(f"h{k}", (64, 512), "float32")], flops=8 * 64 * 512, graph=g,
                    name=f"body/gelu{k}")
    b.graph_output(g, h)
    (x,) = b.op("HostLoad", [], [("x", (64, 512), "float32")], attrs={"stream": "x"}, name="load")
    for i in range(calls):
        if inline:
            for k in range(3):
                (x,) = b.op("Gelu", [x], [(f"h{i}_{k}", (64, 512), "float32")], flops=8 * 64 * 512,
                            name=f"inline/gelu{i}_{k}")
        elif same_input:
            (y,) = b.call(g, [x])
        else:
            (x,) = b.call(g, [x])
    b.op("HostStore", [x if inline or not same_input else y], attrs={"stream": "y"}, name="store")
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
    # the second call site adds only its own output copy (PopART copies per CallOp), not the body
    added = _cat(twice, "vertexInstanceState") - _cat(once, "vertexInstanceState")
    assert 0 < added < _cat(once, "vertexInstanceState") / 3
    def gelu_code_bytes(report):
        return int(report.code.loc[report.code["name"] == "body/gelu", "code_bytes"].sum())

    assert gelu_code_bytes(twice) == gelu_code_bytes(once) > 0


def test_a_graph_called_with_different_tensors_copies_its_input_at_each_call():
    aliased = compile_program(_program(2)).report
    copied = compile_program(_program(2, same_input=False)).report
    copy_steps = copied.liveness["program"].str.contains("/copy_in/")
    assert copy_steps.sum() == 2 and not aliased.liveness["program"].str.contains("/copy_in/").any()
    assert (copied.liveness.loc[copy_steps, "program_type"].astype(str) == "OnTileExecute").all()
    # the copies run on-tile copy vertices and hold copy descriptors: always-live vertex data
    assert _cat(copied, "copyDescriptor") > _cat(aliased, "copyDescriptor") > 0  # outputs are copied out
    assert _cat(copied, "vertexInstanceState") > _cat(aliased, "vertexInstanceState")


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
