"""popxl.ops.print_tensor (PopART ``PrintTensor``): passes its input through and prints it.

On the IPU, Poplar's PrintTensor program prints the tensor's value every time the program runs.
The simulator does the same when its kernel runs (every ``Session.run``, once per execution in
a repeat): it writes ``<title>: <values>`` to standard output, one line block per replica (with
``[replica r]`` after the title when there are several). The values are laid out by numpy's
``array2string`` from the format arguments: ``summarise_threshold`` (0 = never summarise),
``edge_items``, ``max_line_width`` (0 = no splitting), ``digits`` (the precision),
``float_format`` ('auto' / 'none': shortest unique digits, 'fixed', 'scientific'),
``separator`` and the brackets. Poplar's own alignment and padding rules are not reproduced
character for character.

The gradient op is another PrintTensor on the gradient, titled ``<title>_gradient``, printing
only when ``print_gradient`` is True (as PopART's grad op, whose print flag is that argument).
"""

from __future__ import annotations

from typing import Literal

from ..graph import check_in_graph
from ..tensor import Tensor
from ._util import add_op, gcg, out, single

FloatFormat = Literal["auto", "fixed", "scientific", "none"]
FLOAT_FORMATS = ("auto", "fixed", "scientific", "none")


def print_tensor(t: Tensor, title: str | None = None, print_self: bool = True, print_gradient: bool = False,
                 summarise_threshold: int = 1000, edge_items: int = 3, max_line_width: int = 75, digits: int = 8,
                 float_format: FloatFormat = "auto", separator: str = " ", open_bracket: str = "[",
                 close_bracket: str = "]") -> Tensor:
    """Print ``t`` at run time (see the module docstring) and return a copy of it (same shape and
    dtype). ``title`` defaults to ``print_<t.name>``."""
    check_in_graph(gcg(), t=t)
    for name, char in (("separator", separator), ("open_bracket", open_bracket), ("close_bracket", close_bracket)):
        if len(char) != 1:
            raise ValueError(f"Parameter {name} must be 1 character exactly. Not length {len(char)} and value {char}.")
    if float_format not in FLOAT_FORMATS:
        raise KeyError(float_format)
    fmt = {"summarise_threshold": int(summarise_threshold), "edge_items": int(edge_items),
           "max_line_width": int(max_line_width), "digits": int(digits),
           "float_format": "none" if int(digits) == 0 else float_format, "separator": separator,
           "open_bracket": open_bracket, "close_bracket": close_bracket}
    attrs = {"title": f"print_{t.name}" if title is None else str(title), "print_self": bool(print_self),
             "print_gradient": bool(print_gradient), **fmt}
    return single(add_op("PrintTensor", "print_tensor", [t], [out("print_out", t.shape, t.dtype)], attrs))


__all__ = ["FLOAT_FORMATS", "FloatFormat", "print_tensor"]
