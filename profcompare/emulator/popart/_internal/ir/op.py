"""``popart._internal.ir.op``: a class per PopART op class the simulator's ops stand for.

An op the simulator records has PopART's op type name (``MatMul``, ``AddLhsInplace``, ...); its
class here is PopART's C++ class for that type: the type name plus ``Op`` (``MatMulOp``), except
where PopART names the class otherwise (:data:`POPART_CLASS`, from PopART's
``willow/include/popart/op/*.hpp``). Each class is its own: an in-place variant is not a
subclass of its out-of-place op (``AddLhsInplaceOp`` is no ``AddOp``), as in PopART, and
PopART's intermediate base classes (``ElementWiseBinaryOp``, ...) are not given, so
``isinstance`` counts ops of exactly that type. A name that is no op class of the simulator is
refused in one line naming it.
"""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl.errors import SimulatorNotImplementedError, not_implemented_message

#: simulator op type -> PopART's class, where it is not the type name plus ``Op``
#: (willow/include/popart/op: subtract.hpp, negate.hpp, groupnorm.hpp, batchnorm.hpp,
#: accumulate.hpp -- one AccumulateOp whatever its AccumulationType --, isinf.hpp, isnan.hpp,
#: stash.hpp, restore.hpp)
POPART_CLASS = {
    "Sub": "SubtractOp", "Neg": "NegateOp",
    "GroupNormalization": "GroupNormOp", "GroupNormalizationGrad": "GroupNormGradOp",
    "BatchNormalization": "BatchNormOp",
    "AccumulateMean": "AccumulateOp", "AccumulateMovingAverage": "AccumulateOp",
    "AccumulateMovingAverageSquare": "AccumulateOp", "AccumulateSquare": "AccumulateOp",
    "IsInf": "IsInf", "IsNaN": "IsNaN",
    "PipelineStash": "StashOp", "PipelineRestore": "RestoreOp",
}


class Op:
    """``popart._internal.ir.Op``: one op of a graph, read-only (its id, name and type)."""

    __slots__ = ("_record",)

    def __init__(self, record: Any) -> None:
        self._record = record

    @property
    def id(self) -> int:  # noqa: A003 - PopART's name
        """The op's id (numbered from 100 in creation order, as PopART's)."""
        return int(self._record.id)

    def name(self) -> str:
        """The op's name (its debug name)."""
        return str(self._record.name)

    def getName(self) -> str:  # noqa: N802 - PopART's name
        """The op's name (its debug name)."""
        return str(self._record.name)

    def opType(self) -> str:  # noqa: N802 - the op type name, as PopART's ``opid.type``
        """The op type name (``MatMul``, ``GroupNormalization``, ...)."""
        return str(self._record.type)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise SimulatorNotImplementedError(not_implemented_message(
            f"popart._internal.ir.op.{type(self).__name__}.{name}"))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._record.id}>"


def _use_fully_connected_pass(self: Op) -> bool:
    """Whether the matmul is planned with Poplar's fully-connected pass: the op's own setting
    (popxl-addons' ``enable_fc_pass`` / ``disable_fc_pass``, on by default as PopART's
    ``MatMulBaseOp``); PopART also ands the session option ``enableFullyConnectedPass``, which
    the simulator keeps at its default, on."""
    return bool(self._record.attrs.get("fully_connected_pass", True))


#: methods a PopART class has beyond :class:`Op`'s, for what the simulator records
_METHODS: dict[str, dict[str, Any]] = {"MatMulOp": {"useFullyConnectedPass": _use_fully_connected_pass}}

_CLASSES: dict[str, type[Op]] = {}


def class_name(op_type: str) -> str:
    """PopART's class name for a simulator op type."""
    return POPART_CLASS.get(op_type, f"{op_type}Op")


def _class(name: str) -> type[Op]:
    cls = _CLASSES.get(name)
    if cls is None:
        cls = type(name, (Op,), {"__slots__": (), "__module__": __name__, **_METHODS.get(name, {}),
                                 "__doc__": f"PopART's {name} (ops of the simulator counted as such)."})
        _CLASSES[name] = cls
    return cls


def wrap(record: Any) -> Op:
    """The op ``record`` of a simulator graph as an instance of its PopART class."""
    return _class(class_name(record.type))(record)


def _known_class_names() -> set[str]:
    from profcompare.emulator.popxl import execution

    return {class_name(t) for t in execution._KERNELS} | set(_CLASSES)


def __getattr__(name: str) -> Any:
    if not name.startswith("_") and name in _known_class_names():
        return _class(name)
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    raise SimulatorNotImplementedError(not_implemented_message(f"popart._internal.ir.op.{name}"))
