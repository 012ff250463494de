"""The ``RotaryPosEmbed`` C++ custom op that Graphcore's Dolly and Llama 2 popxl applications
build themselves (``modelling/rotary_pos_embed/``, pybind11 module ``rotary_pos_embed_binding``,
class ``RotaryPosEmbedOp``; graphcore/examples ``nlp/dolly/popxl``, ``nlp/llama/popxl``).

Same PopART op identifiers as popxl-addons' op (``popxl.addons.ops`` ``RotaryPosEmbed`` and
``RotaryPosEmbedGrad``, 3 inputs, 1 output) and the same shapes: ``x`` is ``(batch, seq, heads,
hh)``, ``sin`` and ``cos`` rank 3 ``(1 or batch, seq, rotary_dim / 2)`` broadcast over the heads
(the Opx's ``expand({2})``); the first ``rotary_dim`` hidden elements are rotated, the rest pass.
Its forward Opx differs: the first half of the rotated elements are the real parts and the second
half the imaginary ones (``x1 = x[..., :r/2]``, ``x2 = x[..., r/2:r]``; ``y1 = x1 cos - x2 sin``,
``y2 = x2 cos + x1 sin``: GPT-NeoX's and LLaMA's "rotate half"), where popxl-addons' pairs
neighbours. Its gradient Opx is popxl-addons' (interleaved pairs, the opposite angle), as the
application's C++ has it. Simulated as popxl-addons' op with the ``halves`` attribute
(popxl_addons/ops/rotary_pos_embed.py: kernel, gradient rule, three FLOPs per rotated element).
"""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl.pb_handles import OpSettings, PbGraph, PbOp, create_connected_op
from profcompare.emulator.popxl_addons.ops.rotary_pos_embed import OP_TYPE, check_tables, rotation_attrs

#: the pybind11 module the application's ``rotary_pos_embed_binding.cpp`` defines
MODULE = "rotary_pos_embed_binding"


class RotaryPosEmbedOp:
    """The binding's ``RotaryPosEmbedOp``: only ``createOpInGraph`` (and ``outTensor`` of what it
    returns) are bound."""

    @staticmethod
    def createOpInGraph(graph: PbGraph, inputs: dict[int, str], outputs: dict[int, str],  # noqa: N802
                        rotaryDim: int, settings: OpSettings) -> PbOp:  # noqa: N803 - the binding's names
        """Create the op in ``graph`` (not yet recorded: ``ctx._op_created``), with the checks of
        the C++ constructor and ``setup``."""
        if int(rotaryDim) % 2 != 0:
            raise RuntimeError("RotaryPosEmbedOp::RotaryPosEmbedOp rotary_dim must be a multiple of 2")
        if not isinstance(graph, PbGraph):
            raise TypeError(f"createOpInGraph: expected a graph's _pb_graph, got {type(graph).__name__}")
        tensors = graph.graph._tensors
        x, sin, cos = (tensors.get(inputs.get(i, "")) for i in range(3))
        if x is None or sin is None or cos is None or len(inputs) != 3 or len(outputs) != 1:
            raise ValueError("createOpInGraph: RotaryPosEmbedOp takes inputs 0, 1, 2 (x, sin, cos) of the graph "
                             "and one output")
        if x.rank != 4:
            raise RuntimeError("RotaryPosEmbedOp::setup x should have rank 4 (batch, heads, seq, hh)")
        if sin.rank != 3 or cos.rank != 3:
            raise RuntimeError("RotaryPosEmbedOp::setup trig functions should have rank 3 (1 or batch, seq, hh/2)")
        check_tables(x, sin, cos, int(rotaryDim), 3)
        attrs: dict[str, Any] = {**rotation_attrs(x, int(rotaryDim)), "halves": True}
        return create_connected_op(graph, OP_TYPE, settings, inputs,
                                   {0: (outputs[0], x.shape, x.dtype, x.meta_shape)}, attrs)
