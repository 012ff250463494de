"""C++ custom ops a program builds with cppimport: the import hook finds the program's binding
source, the simulator stands in for the ops of known sources (refusing others by name), and the
PopART handles of popxl's custom-op pattern (``_pb_graph``, ``_get_op_settings``,
``createOpInGraph``, ``_op_created``, ``Tensor._from_pb_tensor``) build one op as popxl does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from profcompare.emulator import cpp_custom_ops, popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.cpp_custom_ops import rotary_pos_embed_halves as binding
from profcompare.emulator.cppimport_hook import Hook, spec_for
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl.context import get_current_context, op_debug_context
from profcompare.emulator.popxl.errors import SimulatorNotImplementedError
from profcompare.emulator.popxl_addons.ops.rotary_pos_embed import trig_tables
from profcompare.sim import EmulatorFinder

# a made-up op's sources, laid out as a cppimport binding with one compiled source and a header
_BINDING = '// cppimport\n#include "my_op.hpp"\n/*\n<%\ncfg[\'sources\'] = [\'my_op.cpp\']\nsetup_pybind11(cfg)\n%>\n*/\n'
_SOURCE = '#include "my_op.hpp"\nint f() { return 1; }\n'
_HEADER = "int f();\n"


def _write_op(directory: Path, source: str = _SOURCE) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "my_binding.cpp").write_text(_BINDING)
    (directory / "my_op.cpp").write_text(source)
    (directory / "my_op.hpp").write_text(_HEADER)
    return directory / "my_binding.cpp"


@op_debug_context
def _rotary(t: popxl.Tensor, sin: popxl.Tensor, cos: popxl.Tensor, rotary_dim: int) -> popxl.Tensor:
    """The Python wrapper of a C++ custom op, as Graphcore's applications write it."""
    ctx = get_current_context()
    g = ctx.graph
    settings = ctx._get_op_settings("RotaryPosEmbedOp")
    op = binding.RotaryPosEmbedOp.createOpInGraph(
        g._pb_graph, {0: t.id, 1: sin.id, 2: cos.id}, {0: g._create_tensor_id("t_rotated")}, rotary_dim, settings)
    ctx._op_created(op)
    return popxl.Tensor._from_pb_tensor(op.outTensor(0))


def test_fingerprint_covers_the_compiled_sources_and_headers_not_whitespace(tmp_path: Path) -> None:
    first = cpp_custom_ops.fingerprint(_write_op(tmp_path / "a"))
    assert len(first) == 16
    assert cpp_custom_ops.fingerprint(_write_op(tmp_path / "b", _SOURCE.replace(" ", "\n  "))) == first
    assert cpp_custom_ops.fingerprint(_write_op(tmp_path / "c", _SOURCE.replace("1", "2"))) != first
    assert [p.name for p in cpp_custom_ops._source_files(tmp_path / "a" / "my_binding.cpp")] == [
        "my_binding.cpp", "my_op.cpp", "my_op.hpp"]


def test_hook_gives_the_simulated_module_for_known_sources_and_refuses_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _write_op(tmp_path / "pkg")
    spec = spec_for("pkg.my_binding", [str(tmp_path / "pkg")])
    assert spec is not None and spec.origin == str(source)
    with pytest.raises(SimulatorNotImplementedError, match=r"^the C\+\+ custom op module my_binding \(cppimport, "
                       r".*not implemented by the profcompare simulator$"):
        spec.loader.create_module(spec)
    monkeypatch.setitem(cpp_custom_ops.KNOWN, cpp_custom_ops.fingerprint(source), ("rotary_pos_embed_halves", "test"))
    assert Hook().find_spec("pkg.my_binding", [str(tmp_path / "pkg")]).loader.create_module(spec) is binding
    # a top-level name is looked for under the sys.path entries; no opt-in comment, no module
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    assert spec_for("my_binding") is not None
    (tmp_path / "pkg" / "plain.cpp").write_text("int g();\n")
    assert spec_for("plain") is None and spec_for("absent") is None


def test_import_hook_module_is_the_simulators_and_the_rest_of_cppimport_is_not() -> None:
    spec = EmulatorFinder().find_spec("cppimport.import_hook")
    assert spec.loader.create_module(spec).Hook is Hook
    assert EmulatorFinder().find_spec("cppimport") is None


def _run(x: np.ndarray, dy: np.ndarray, sin: np.ndarray, cos: np.ndarray, rotary_dim: int
         ) -> tuple[np.ndarray, np.ndarray, popxl.Ir]:
    ir = popxl.Ir()
    with ir.main_graph:
        xv = popxl.variable(x, popxl.float32)
        s, c = popxl.constant(sin[None], popxl.float32), popxl.constant(cos[None], popxl.float32)
        graph = ir.create_graph(_rotary, xv, s, c, rotary_dim)
        info = popxl.transforms.autodiff(graph, grads_required=graph.inputs[:1])
        call = ops.call_with_info(graph, xv, s, c)
        (dx,) = ops.call(info.graph, popxl.constant(dy, popxl.float32), inputs_dict=info.inputs_dict(call))
        streams = [addons.host_store(call.outputs[0]), addons.host_store(dx)]
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()
    return out[streams[0]], out[streams[1]], ir


def test_halves_rotation_forward_and_the_applications_interleaved_gradient() -> None:
    # one head of 6 elements at positions 0 and 1; the first 4 rotated: reals [0:2], imaginaries [2:4]
    x = np.tile(np.array([1.0, 0.0, 0.0, 1.0, 7.0, 8.0], np.float32), (1, 2, 1, 1))
    sin, cos = trig_tables(2, 4)  # position 1: sin = [0.84147098, 0.00999983], cos = [0.54030231, 0.99995]
    y, dx, ir = _run(x, x, sin, cos, 4)
    np.testing.assert_allclose(y[0, 0, 0], [1.0, 0.0, 0.0, 1.0, 7.0, 8.0])
    # y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin with x1 = [1, 0], x2 = [0, 1]
    np.testing.assert_allclose(y[0, 1, 0], [0.54030231, -0.00999983, 0.84147098, 0.99995, 7.0, 8.0], rtol=1e-6)
    # the application's gradient Opx pairs neighbours (re, im) and rotates by the opposite angle
    np.testing.assert_allclose(dx[0, 1, 0], [0.54030231, -0.84147098, 0.00999983, 0.99995, 7.0, 8.0], rtol=1e-6)
    (op,) = [o for g in ir._graphs.values() for o in g._ops if o.type == "RotaryPosEmbed"]
    assert op.name == "RotaryPosEmbedOp" and op.attrs == {"rotary_dim": 4, "flops": 3 * 2 * 4, "halves": True}
    assert op.outputs[0].id.endswith("t_rotated")


def test_created_op_is_recorded_only_by_op_created_and_checks_as_the_cpp() -> None:
    ir = popxl.Ir()
    seen: list[str] = []
    with ir.main_graph, popxl.name_scope("attn"):
        handle = ir.main_graph.register_op_created_hook(lambda op: seen.append(op.type))
        t = popxl.variable(np.zeros((1, 2, 1, 4), np.float32))
        s = popxl.constant(np.zeros((1, 2, 2), np.float32))
        ctx, g = get_current_context(), ir.main_graph
        settings = ctx._get_op_settings("RotaryPosEmbedOp")
        assert settings.name == "attn/RotaryPosEmbedOp"
        op = binding.RotaryPosEmbedOp.createOpInGraph(g._pb_graph, {0: t.id, 1: s.id, 2: s.id},
                                                      {0: g._create_tensor_id("t_rotated")}, 4, settings)
        assert seen == []
        ctx._op_created(op)
        assert seen == ["RotaryPosEmbed"]
        g.remove_op_created_hook(handle)
        with pytest.raises(RuntimeError, match="rotary_dim must be a multiple of 2"):
            binding.RotaryPosEmbedOp.createOpInGraph(g._pb_graph, {0: t.id, 1: s.id, 2: s.id}, {0: "o"}, 3, settings)
        with pytest.raises(RuntimeError, match="trig functions should have rank 3"):
            binding.RotaryPosEmbedOp.createOpInGraph(g._pb_graph, {0: t.id, 1: t.id, 2: s.id}, {0: "o"}, 4, settings)
        with pytest.raises(SimulatorNotImplementedError, match=r"^popxl\.Graph\._pb_graph\.createConnectedOp_AddOp "):
            g._pb_graph.createConnectedOp_AddOp()
