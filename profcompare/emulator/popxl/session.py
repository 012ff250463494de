"""popxl.Session on the profcompare simulator (never hardware; ``Session.simulated`` is True).

Creating a Session lowers the Ir (``profcompare.emulator.lowering.lower``), hands the
LoweredProgram to ``profcompare.emulator.engine.Engine`` (the compile model, which may raise
IpuOutOfMemoryError or EngineOptionsError) and compiles the graphs into numpy closures.

Host arrays are shaped ``(num_host_transfers?, replicas?, *stream shape)``, each leading
dimension present only when it is > 1. Variables keep a host copy (``get_tensors_data``) and a
device copy per replica; remote and replica-sharded remote variables live in remote buffers
(per replica ``(entries, *shard shape)``) and are seen by the host in their full shape.

A variable created from an ``np.memmap`` has that memmap as its host copy, as in popxl:
``get_tensors_data`` returns the memmap itself, ``write_variables_data`` writes into it and
``weights_to_host`` writes the device values into it and flushes every variable's memmap to its
file. An Ir holding a read-only memmap has no weights to host (``weights_to_host`` raises, and
the Session does not copy weights to the host on exit).

Compile-only execution (``PROFCOMPARE_SIM_EXECUTION=compile-only``, ``profcompare profile
--compile-only``) lowers and compiles exactly the same, with the abstract executor
(``abstract_execution.py``): no device copies, no host copies, nothing computed. Inputs are
checked for shape and dtype but not copied; ``run`` returns zero arrays of the right shape and
dtype; ``weights_from_host`` / ``weights_to_host`` (also on exit) move nothing and leave the
host data as it is; ``get_tensor_data(s)`` returns zeros of the host shape and dtype
(constants: their data) and warns once per Session (CompileOnlyWarning); ``write_variable_data``
checks shape and dtype and keeps nothing. A numeric Session first checks that its copies fit in
host memory (``host_memory.py``) and otherwise suggests compile-only.
"""

from __future__ import annotations

import logging
import math
import os
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from profcompare.backend import execution_mode

from . import host_memory
from .abstract_execution import AbstractExecutor, ProgramExecutor
from .errors import CompileOnlyWarning, SessionInputError
from .execution import DeviceState, Executor
from .ir import Ir
from .streams import DeviceToHostStream, HostToDeviceStream
from .tensor import Constant, Tensor, Variable

if TYPE_CHECKING:
    from profcompare.emulator.program import LoweredProgram

#: device names popxl accepts; all run on the simulator
DEVICES = ("cpu", "ipu_model", "ipu_hw")

_POPART_LOG = logging.getLogger("popart")

_DOWNCASTS = {(np.dtype(np.float64), np.dtype(np.float32)), (np.dtype(np.int64), np.dtype(np.int32)),
              (np.dtype(np.uint64), np.dtype(np.uint32))}


def _next_pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(n))) if n > 1 else 1


def _returns_all_replicas(v: Variable) -> bool:
    """True when popxl returns one value per replica for ``v`` (not one per group)."""
    return v.retrieval_mode == "all_replicas" and v.replica_grouping.group_size > 1


class Session:
    """Runs an Ir on the profcompare simulator. Use ``with session:`` around runs."""

    #: this Session executes on the simulator, not on an IPU
    simulated = True

    def __init__(self, ir: Ir, device_desc: str = "cpu", weights_to_host_on_exit: bool = True) -> None:
        if not isinstance(ir, Ir):
            raise TypeError(f"Session needs a popxl Ir, got {type(ir).__name__}")
        if device_desc not in DEVICES:
            raise ValueError(f"device_desc must be one of {', '.join(DEVICES)} (all run on the profcompare "
                             f"simulator), got {device_desc!r}")
        replicas = ir.instance_replication_factor
        from .ipu_placement import ipus_per_replica
        #: IPUs of one replica: the highest IPU any op uses + 1 (popxl Session._get_ipus_per_replica)
        self.ipus_per_replica = ipus_per_replica(ir)
        self.num_ipus = _next_pow2(replicas * self.ipus_per_replica)
        if device_desc == "cpu" and self.num_ipus > 1:
            raise ValueError(f"device 'cpu' supports one IPU, but {replicas} replicas of {self.ipus_per_replica} "
                             f"IPU(s) need {self.num_ipus}; use 'ipu_model' or 'ipu_hw'")
        self._ir = ir
        self.device_desc = device_desc
        self.weights_to_host_on_exit = weights_to_host_on_exit
        if ir._has_read_only_memmap:
            self.weights_to_host_on_exit = False
            if weights_to_host_on_exit:
                _POPART_LOG.info("Weights to host has been disabled as the `ir` contains a read-only memmapped "
                                 "variable.")
        from profcompare.emulator import engine as engine_module
        from profcompare.emulator.lowering import lower

        #: "numeric" (values computed) or "compile-only" (shapes and dtypes only)
        self.execution = execution_mode.current()
        self._compile_only = self.execution == execution_mode.COMPILE_ONLY
        self._warned_values = False
        if not self._compile_only:
            host_memory.check(host_memory.session_bytes(ir), f"the Session's copies of {len(ir._variables)} "
                              f"variable(s) and {len(ir._remote_buffers)} remote buffer(s) on {replicas} replica(s)")
        program = lower(ir, device_desc)
        self._check_transfers(program)
        # the lowered program is the compile model's input only: not kept once compiled (at LLM
        # sizes it is hundreds of thousands of ops, held through the execution profile's write)
        self.engine = engine_module.Engine(program, device=device_desc, environ=os.environ)
        del program
        ir._prepared = True
        self._replicas = replicas
        #: device memory of the numeric executor (a compile-only Session has none)
        self._state: DeviceState = None  # type: ignore[assignment]
        self._executor: ProgramExecutor
        self._host: dict[Variable, np.ndarray] = {}
        if self._compile_only:
            self._executor = AbstractExecutor(ir)
        else:
            self._state = DeviceState(ir)
            self._executor = Executor(ir, self._state)
            # a memmap-backed variable's host copy is its memmap, shared with the caller
            self._host = {v: v._memmap_arr if v._memmap_arr is not None else np.array(v._host_data)
                          for v in ir._variables}
        # popxl keeps a per-replica device-to-host buffer for "all_replicas" variables whose
        # groups hold more than one replica; it is allocated (zeroed) when the session first
        # attaches and filled by each weights_to_host
        self._per_replica: dict[Variable, np.ndarray] = {}
        self._ever_attached = False
        self._attached = False
        self._was_attached_stack: list[bool] = []
        self._host_stale = False
        self._expected = [s for s in ir._h2d_streams if s in ir.get_all_h2d_streams()]

    # --- info ---------------------------------------------------------------------------------
    @property
    def ir(self) -> Ir:
        """The Ir this session runs."""
        return self._ir

    @property
    def is_attached(self) -> bool:
        """True inside ``with session:``."""
        return self._attached

    def __repr__(self) -> str:
        mode = ", compile only" if self._compile_only else ""
        return (f"Session(device={self.device_desc!r}, replicas={self._replicas}, ipus={self.num_ipus}; "
                f"profcompare simulator (not hardware){mode})")

    def expected_inputs(self) -> list[HostToDeviceStream]:
        """The host-to-device streams ``run`` needs (those with a host_load)."""
        return list(self._expected)

    def _extra_dims(self) -> tuple[int, ...]:
        t, r = self._ir.num_host_transfers, self._replicas
        return ((t,) if t > 1 else ()) + ((r,) if r > 1 else ())

    def _full_input_shape(self, shape: Iterable[int]) -> tuple[int, ...]:
        """Host array shape for a stream of ``shape``: (num_host_transfers?, replicas?, *shape)."""
        return self._extra_dims() + tuple(shape)

    def _check_transfers(self, program: LoweredProgram) -> None:
        loads: dict[str, int] = {}
        for step in program.schedule:
            op = program.ops[step.op]
            if op.type in ("HostLoad", "HostStore") and not step.phase:
                loads[op.attrs["stream"]] = loads.get(op.attrs["stream"], 0) + 1
        t = self._ir.num_host_transfers
        for name, n in loads.items():
            if n > t:
                raise ValueError(f"stream {name!r} is transferred {n} times per run but ir.num_host_transfers is "
                                 f"{t}; set ir.num_host_transfers = {n}")

    # --- attach / detach -----------------------------------------------------------------------
    def __enter__(self) -> Session:
        # as popxl: only the context that attaches does weights_from_host; a nested
        # ``with session:`` (already attached) changes nothing, and its exit does not detach
        self._was_attached_stack.append(self._attached)
        if not self._attached:
            self._attached = True
            if not self._ever_attached:
                self._ever_attached = True
                if self._compile_only:
                    self._per_replica = {}
                else:
                    self._per_replica = {v: np.zeros((self._replicas, *v.shape), v.dtype.as_numpy())
                                         for v in self._ir._variables if _returns_all_replicas(v)}
            self.weights_from_host()
        return self

    def __exit__(self, exc_type: object = None, *exc: object) -> None:
        was_attached = self._was_attached_stack.pop() if self._was_attached_stack else False
        if was_attached or not self._attached:
            return
        try:
            if exc_type is None and self.weights_to_host_on_exit:
                self.weights_to_host()
        finally:
            self._attached = False
            self.engine.on_detach()

    def _need_attached(self, what: str) -> None:
        if not self._attached:
            raise ValueError(f"Session.{what} needs an attached session: call it inside `with session:`")

    # --- weights -------------------------------------------------------------------------------
    def weights_from_host(self) -> None:
        """Copy every variable's host value to the device (remote ones into their buffers)."""
        self._need_attached("weights_from_host")
        if self._compile_only:
            return  # nothing lives on the simulated devices
        for v in self._ir._variables:
            self._to_device(v)
        self._state.load_shards()
        self._host_stale = False

    def weights_to_host(self) -> None:
        """Copy every variable's device value (the first replica of each group) to the host;
        for "all_replicas" variables also every replica's value. A memmap-backed variable's value
        is written into its memmap, and every memmap is then flushed to its file. Compile-only:
        nothing was computed, so nothing is copied and the host data stays as it was.

        Raises Exception when the Ir holds a read-only memmapped variable (as popxl does)."""
        if self._ir._has_read_only_memmap:
            # a bare Exception, as popxl raises: programs catching it see the same type
            raise Exception("Writing data from device to host is not possible as the `ir` contains a "
                            "read-only memmap.")
        self._need_attached("weights_to_host")
        if self._compile_only:
            self._host_stale = False
            return
        self._state.store_shards()
        for v in self._ir._variables:
            self._set_host(v, self._from_device(v))
            if v in self._per_replica:
                self._per_replica[v] = self._from_device_per_replica(v)
        self._host_stale = False
        for v in self._ir._variables:
            v._flush_data_if_memmap()

    def _set_host(self, v: Variable, value: np.ndarray) -> None:
        """Replace ``v``'s host copy by ``value``; a memmap-backed one is written in place."""
        if v._memmap_arr is not None:
            v._memmap_arr[...] = value
        else:
            self._host[v] = value

    def _to_device(self, v: Variable) -> None:
        r = self._replicas
        data = self._host[v]
        rg = v._replica_grouping
        if rg.num_groups > 1:
            per_replica = data[np.asarray(rg.assignment)]
        else:
            per_replica = np.broadcast_to(data, (r, *v.shape))
        buf = v._remote_buffer
        if buf is None:
            self._state.variables[v][...] = per_replica
            return
        store = self._state.buffers[buf.remote_buffer_id]
        if not v._sharded:
            store[:, v._offset] = per_replica
            return
        if not rg.is_const:
            # Sharded over the groups of its constant-stride grouping, as popxl lays it out.
            rg = rg.const_rg
        g = rg.group_size
        shard = buf.tensor_shape[0]
        a, gs, s = self._ir.replica_grouping()._layout() if rg.num_groups == 1 else rg._layout()
        flat = np.zeros((r, g * shard), per_replica.dtype)
        flat[:, :v.nelms] = per_replica.reshape(r, -1)
        chunks = flat.reshape(a, gs, s, g, shard)
        idx = np.arange(g)
        mine = np.transpose(chunks[:, idx, :, idx, :], (1, 0, 2, 3)).reshape(r, shard)
        store[:, v._offset] = mine

    def _from_device(self, v: Variable) -> np.ndarray:
        rg = v._replica_grouping
        first = [rg.assignment.index(k) for k in range(rg.num_groups)]
        buf = v._remote_buffer
        if buf is None:
            dev = self._state.variables[v]
            out = dev[first]
        elif not v._sharded:
            out = self._state.buffers[buf.remote_buffer_id][first, v._offset]
        else:
            store = self._state.buffers[buf.remote_buffer_id][:, v._offset]  # (R, shard)
            const = rg.const_rg
            a, g, s = const._layout()
            shards = store.reshape(a, g, s, -1)
            groups = []
            for k in range(const.num_groups):
                ai, si = divmod(k, s)
                groups.append(shards[ai, :, si].reshape(-1)[:v.nelms].reshape(v.shape))
            out = np.stack(groups)
            if not rg.is_const:
                out = out[rg.to_host_map]
        out = np.array(out)
        return out if rg.num_groups > 1 else out[0]

    def _from_device_per_replica(self, v: Variable) -> np.ndarray:
        """``(replicas, *shape)``: the value on each replica. A replica-sharded variable's value
        is reconstructed per group and repeated for every replica of the group, as popxl does."""
        buf = v._remote_buffer
        if buf is None:
            return np.array(self._state.variables[v])
        if not v._sharded:
            return np.array(self._state.buffers[buf.remote_buffer_id][:, v._offset])
        groups = self._from_device(v)
        rg = v._replica_grouping
        if rg.num_groups == 1:
            return np.array(np.broadcast_to(groups, (self._replicas, *v.shape)))
        return np.array(groups[np.asarray(rg.assignment)])

    def get_tensor_data(self, tensor: Tensor) -> np.ndarray:
        """Host value of a Variable or Constant (remote/RTS variables in their full shape)."""
        return self._tensors_data([tensor])[tensor]

    def get_tensors_data(self, tensors: Iterable[Tensor]) -> dict[Tensor, np.ndarray]:
        """``{tensor: host value}`` for Variables and Constants; TypeError for other tensors.

        A variable with ``retrieval_mode="all_replicas"`` whose groups hold more than one
        replica comes back with one value per replica, ``(replication_factor, *shape)``,
        indexed by replica: as in popxl, the values of the last device-to-host copy (zeros if
        the session attached but never copied weights to the host). Any other memmap-backed
        variable's value is its memmap itself (not a copy). Compile-only: zeros of those shapes
        and dtypes for variables (constants: their data), with a CompileOnlyWarning once per
        Session."""
        return self._tensors_data(tensors)

    def _tensors_data(self, tensors: Iterable[Tensor]) -> dict[Tensor, np.ndarray]:
        tensors = list(tensors)
        for t in tensors:
            if not isinstance(t, (Variable, Constant)):
                raise TypeError(f"get_tensors_data needs Variables or Constants; {t.id} is a {type(t).__name__}")
            if t.ir is not self._ir:
                raise ValueError(f"{t.id} belongs to another Ir than this session's")
        if self._compile_only:
            return self._placeholder_values(tensors)
        if self._attached and self._host_stale:
            self.weights_to_host()
        out: dict[Tensor, np.ndarray] = {}
        for t in tensors:
            if isinstance(t, Constant):
                out[t] = np.array(t._data)
            elif _returns_all_replicas(t):  # type: ignore[arg-type]
                if not self._ever_attached:
                    # popxl reads a device-to-host buffer that only exists once attached
                    raise ValueError(f"get_tensor_data({t.id}): a variable with retrieval_mode='all_replicas' "
                                     "can only be read after the session has been attached (`with session:`)")
                out[t] = np.array(self._per_replica[t])  # type: ignore[index]
            elif t._memmap_arr is not None:  # type: ignore[union-attr]
                out[t] = t._memmap_arr  # type: ignore[union-attr]
            else:
                out[t] = np.array(self._host[t])  # type: ignore[index]
        return out

    def _placeholder_values(self, tensors: list[Tensor]) -> dict[Tensor, np.ndarray]:
        """Compile-only get_tensors_data: zeros in the host shape popxl would return."""
        out: dict[Tensor, np.ndarray] = {}
        for t in tensors:
            if isinstance(t, Constant):
                out[t] = np.array(t._data)
                continue
            v: Variable = t  # type: ignore[assignment]
            if _returns_all_replicas(v) and not self._ever_attached:
                raise ValueError(f"get_tensor_data({v.id}): a variable with retrieval_mode='all_replicas' "
                                 "can only be read after the session has been attached (`with session:`)")
            shape = (self._replicas, *v.shape) if _returns_all_replicas(v) else v.shape_on_host
            out[t] = np.zeros(shape, v.dtype.as_numpy())
        if any(not isinstance(t, Constant) for t in tensors):
            self._warn_values_not_computed("get_tensor_data")
        return out

    def _warn_values_not_computed(self, what: str) -> None:
        if self._warned_values:
            return
        self._warned_values = True
        warnings.warn(f"{what}: values were not computed (compile-only mode, {execution_mode.ENV_VAR}="
                      f"{execution_mode.COMPILE_ONLY}); returning zeros of the variables' host shapes and dtypes",
                      CompileOnlyWarning, stacklevel=5)  # the caller of get_tensor_data(s)

    def write_variable_data(self, tensor: Variable, data: np.ndarray) -> None:
        """Write a variable's host value (exact dtype, shape_on_host); also to device if attached."""
        self.write_variables_data({tensor: data})

    def write_variables_data(self, tensors: Mapping[Variable, np.ndarray]) -> None:
        """Write several variables' host values (a memmap-backed variable's into its memmap, without
        flushing it); also to the device if attached. Compile-only: checked, then not kept."""
        checked = []
        for v, data in tensors.items():
            if not isinstance(v, Variable):
                raise TypeError(f"write_variables_data needs Variables; {getattr(v, 'id', v)!r} is a {type(v).__name__}")
            if v.ir is not self._ir:
                raise ValueError(f"{v.id} belongs to another Ir than this session's")
            arr = np.asarray(data)
            if arr.dtype != v.dtype.as_numpy():
                raise SessionInputError(f"variable {v.id!r}: data dtype {arr.dtype} does not match the variable "
                                        f"dtype {v.dtype.name}")
            if arr.shape != v.shape_on_host:
                raise SessionInputError(f"variable {v.id!r}: data shape {arr.shape} does not match the host "
                                        f"shape {v.shape_on_host}")
            if _returns_all_replicas(v):
                # popxl 3.4 refuses these writes too
                raise NotImplementedError(f"write_variable_data({v.id}): writing a variable with "
                                          "retrieval_mode='all_replicas' is not supported by popxl")
            checked.append((v, arr))
        if self._compile_only:
            return
        checked = [(v, np.array(arr)) for v, arr in checked]
        if self._attached and self._host_stale and not self._ir._has_read_only_memmap:
            # an Ir with a read-only memmap never copies weights to the host (popxl neither)
            self.weights_to_host()
        for v, arr in checked:
            self._set_host(v, arr)
            if self._attached:
                self._to_device(v)
        if self._attached and checked:
            self._state.load_shards()  # popxl runs the whole WeightsFromHost program again

    # --- running -------------------------------------------------------------------------------
    def create_host_outputs(self) -> dict[DeviceToHostStream, np.ndarray]:
        """Zeroed host arrays for every stored d2h stream, in host shape."""
        streams = [s for s in self._ir._d2h_streams if s in self._ir.get_all_d2h_streams()]
        return {s: np.zeros(self._full_input_shape(s.shape), s.dtype.as_numpy()) for s in streams}

    def run(self, inputs: Mapping[HostToDeviceStream, Any] | None = None,
            downcast_inputs: bool = True) -> dict[DeviceToHostStream, np.ndarray]:
        """Run the main program once; return ``{d2h stream: host array}``."""
        outputs = self.create_host_outputs()
        if self._compile_only:
            # fresh zeros: left untouched, so large outputs stay unbacked pages
            self._need_attached("run")
            self._prepare_inputs(inputs or {}, downcast_inputs)
            self._run_abstract(outputs, zero=False)
            return outputs
        self.run_with_outputs(inputs, outputs, downcast_inputs)
        return outputs

    def run_with_outputs(self, inputs: Mapping[HostToDeviceStream, Any] | None,
                         outputs: Mapping[DeviceToHostStream, np.ndarray], downcast_inputs: bool = True) -> None:
        """Run the main program once, writing stored values into ``outputs`` (host-shaped arrays;
        compile-only: zeros)."""
        self._need_attached("run")
        ins = self._prepare_inputs(inputs or {}, downcast_inputs)
        if self._compile_only:
            self._run_abstract(outputs)
            return
        t, r = self._ir.num_host_transfers, self._replicas
        outs: list[np.ndarray] = []
        views: list[tuple[np.ndarray, np.ndarray]] = []
        for s in self._ir._d2h_streams:
            dt = s.dtype.as_numpy()
            dev = np.zeros((t, r, *s.shape), dt)
            outs.append(dev)
            if s in outputs:
                host = outputs[s]
                want = self._full_input_shape(s.shape)
                if tuple(host.shape) != want or host.dtype != dt:
                    raise SessionInputError(f"output stream {s.tensor_id!r}: expected a host array of shape {want} "
                                            f"and dtype {dt}, got {tuple(host.shape)} {host.dtype}")
                views.append((host, dev))
        self._executor.run(ins, outs)
        for host, dev in views:
            host[...] = dev.reshape(host.shape)
        self._host_stale = True
        self.engine.on_run()

    def _run_abstract(self, outputs: Mapping[DeviceToHostStream, np.ndarray], zero: bool = True) -> None:
        """A compile-only run: outputs checked and (``zero``) set to zero, nothing computed or copied."""
        for s, host in outputs.items():
            dt = s.dtype.as_numpy()
            want = self._full_input_shape(s.shape)
            if tuple(host.shape) != want or host.dtype != dt:
                raise SessionInputError(f"output stream {s.tensor_id!r}: expected a host array of shape {want} "
                                        f"and dtype {dt}, got {tuple(host.shape)} {host.dtype}")
            if zero:
                host[...] = 0
        self._executor.run([], [])
        self.engine.on_run()

    def _prepare_inputs(self, inputs: Mapping[HostToDeviceStream, Any], downcast: bool) -> list[Any]:
        expected = set(self._expected)
        given = set(inputs)
        unexpected = [s for s in inputs if s not in expected]
        if unexpected:
            names = ", ".join(repr(getattr(s, "tensor_id", s)) for s in unexpected)
            raise SessionInputError(f"Unexpected input stream(s) {names}: the program has no host_load for them "
                                    f"(expected: {', '.join(repr(s.tensor_id) for s in self._expected) or 'none'})")
        missing = [s for s in self._expected if s not in given]
        if missing:
            raise SessionInputError("Missing input stream(s) "
                                    + ", ".join(f"{s.tensor_id!r} (host shape {self._full_input_shape(s.shape)}, "
                                                f"{s.dtype.name})" for s in missing))
        t, r = self._ir.num_host_transfers, self._replicas
        result: list[Any] = [None] * len(self._ir._h2d_streams)
        index = {s: i for i, s in enumerate(self._ir._h2d_streams)}
        for s, data in inputs.items():
            arr = np.asarray(data)
            want_dt = s.dtype.as_numpy()
            if arr.dtype != want_dt:
                if downcast and (arr.dtype, want_dt) in _DOWNCASTS:
                    if self._compile_only:  # checked, never copied
                        arr = np.broadcast_to(np.zeros((), want_dt), arr.shape)
                    else:
                        arr = arr.astype(want_dt)
                else:
                    raise SessionInputError(f"input stream {s.tensor_id!r}: expected dtype {want_dt}, got {arr.dtype}")
            want = self._full_input_shape(s.shape)
            if arr.shape != want:
                if arr.size == int(np.prod(want, dtype=np.int64)) and _squeezed(arr.shape) == _squeezed(want):
                    arr = arr.reshape(want)
                else:
                    raise SessionInputError(
                        f"input stream {s.tensor_id!r}: expected a host array of shape {want} "
                        f"(num_host_transfers={t}, replicas={r}, stream shape {s.shape}; leading dims only when "
                        f"> 1), got {arr.shape}")
            if not self._compile_only:
                result[index[s]] = arr.reshape((t, r, *s.shape))
        return result


def _squeezed(shape: Iterable[int]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)
