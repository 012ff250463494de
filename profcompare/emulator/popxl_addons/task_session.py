"""popxl-addons ``task_session``: ``TaskSession`` and ``write_variables_pb`` (3.0 and 3.4);
``initialise_memmap_dir_from_checkpoint`` (3.4 only).

TaskSession
    A popxl Session (created, and so compiled, inside ``timer("PopXL compilation")``) that also
    holds the task's ``inputs`` / ``outputs`` (InputStreams / OutputStreams, or iterables of
    streams, then keyed by stream name) and its ``state`` (NamedTensors of variables), with
    checkpoints of the state. The generations store them differently:

    3.4 (``TaskSession(inputs, outputs, state, max_checkpoints=1, *args, **kwargs)``)
        ``save_checkpoint(dir)`` reads the state from the device and writes, in ``dir`` (taken
        relative to the working directory), ``model/<dotted name>.npz`` per variable (one array
        under its name; a variable whose value is backed by a ``np.memmap`` has the memmap's
        file copied instead), the dataloader's state (``dataloader.bin``, when one is set) and
        ``session_info.json`` (``session_state``, which ``run`` keeps counting in ``steps``).
        At most ``max_checkpoints`` directories are kept: saving beyond that deletes the oldest
        this session wrote. ``load_checkpoint(dir, report_missing="warn", skip_memmap=False)``
        writes the variables whose file is present, resumes the dataloader and replaces
        ``session_state`` (``{"steps": 0}`` without ``session_info.json``); missing or extra
        files and session keys are reported (``"none"``, ``"warn"``: a logged warning,
        ``"error"``: ValueError). ``skip_memmap`` is accepted and unused, as in popxl-addons.
    3.0 (``TaskSession(inputs, outputs, state, *args, **kwargs)``)
        ``save_checkpoint(file_path)`` writes one ``np.savez`` file with the ``{name: array}``
        dict pickled under ``ckpt``; ``load_checkpoint(file_path, report_missing="warn")``
        writes the variables present in both. No session state, dataloader or step counting.

    ``wandb://<name>`` paths save to and load from Weights & Biases artifacts (``wandb`` must
    be installed); only instance 0 of a distributed run writes checkpoints (3.4; the
    simulator runs one instance). ``load_from_session(src)`` copies ``src``'s state into the
    variables of the same names.

write_variables_pb
    popxl-addons hands the arrays to PopART (``writeWeights``: each array replaces the host copy
    of the weight with that id; ids that are no weight of the session are ignored), then, when
    the session is attached, sends *every* host copy to the device (``weightsFromHost``). The
    simulator writes through ``Session.write_variables_data``, which does the same for variables
    whose host layout is the device's. It refuses, naming the case, what it cannot reproduce:
    variables with several replica groups (PopART takes the groups in host order, popxl's write
    reorders them), and ``retrieval_mode="all_replicas"`` variables. As in PopART, a write while
    attached after runs sends the host's (older) copies of the other variables to the device too.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import shutil
import tempfile
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np

from profcompare.emulator.popxl.popdist_env import read_launch
from profcompare.emulator.popxl_addons._compat import not_supported, popxl
from profcompare.emulator.popxl_addons._generation import Generational, OnlyIn, current
from profcompare.emulator.popxl_addons.named_tensors import NamedTensorData, NamedTensors
from profcompare.emulator.popxl_addons.streams import InputStreams, OutputStreams
from profcompare.emulator.popxl_addons.utils import timer

__all__ = ["TaskSession", "write_variables_pb"]

ReportMissingMethods = Literal["none", "warn", "error"]
_SESSION_FILENAME = "session_info.json"
_DATALOADER_FILENAME = "dataloader.bin"


def write_variables_pb(session: popxl.Session, weights: Mapping[popxl.Tensor, np.ndarray]) -> None:
    """Write ``weights`` (variable -> host array of its host shape and dtype) into ``session``'s
    host copies, and to the device when attached (see the module docstring for what is refused)."""
    variables: dict[Any, np.ndarray] = {}
    for tensor, data in weights.items():
        if not isinstance(tensor, popxl.Variable) or tensor.ir is not session.ir:
            continue  # PopART ignores ids that are no weight of the session
        if tensor.retrieval_mode == "all_replicas":
            raise not_supported("write_variables_pb", f"variable {tensor.id} with retrieval_mode='all_replicas'")
        if tensor.replica_grouping.num_groups > 1:
            raise not_supported("write_variables_pb", f"variable {tensor.id} with "
                                f"{tensor.replica_grouping.num_groups} replica groups")
        variables[tensor] = data
    if session.is_attached:
        # PopART replaces the host copies without reading the device first, then sends every host
        # copy: clearing the session's "device is newer" mark makes write_variables_data do the same
        session._host_stale = False
        session.write_variables_data(variables)
        session.weights_from_host()
    else:
        session.write_variables_data(variables)


def _report_missing(ckpt_keys: Iterable[Any], state_keys: Iterable[Any], method: str, what: str) -> None:
    """Warn about (``"warn"``) or refuse (``"error"``: ValueError) keys present on one side only;
    ``what`` is the generation's word for them ("keys" in 3.4, "Tensors" in 3.0)."""
    if method == "none":
        return
    ckpt, state = set(ckpt_keys), set(state_keys)
    lines = []
    if ckpt - state:
        lines.append(f"Checkpoint {what} not in state: {ckpt - state}")
    if state - ckpt:
        lines.append(f"state {what} not in checkpoint: {state - ckpt}")
    if lines:
        if method == "error":
            raise ValueError("\n".join(lines))
        logging.warning("\n".join(lines))


def _wandb_histogram(name: str, step: int, data: np.ndarray) -> None:
    import wandb  # type: ignore[import-not-found]

    data = data.flatten().astype(np.float32)
    finite = np.isfinite(data)
    wandb.log({f"{name}:histogram": wandb.Histogram(data[finite]), f"{name}:not_finite": np.sum(~finite)}, step=step)


def _streams(streams: Any, collection: type) -> Any:
    return streams if isinstance(streams, collection) else collection.from_streams(streams)


def _init_30(self: Any, inputs: Any, outputs: Any, state: NamedTensors, *args: Any, **kwargs: Any) -> None:
    with timer("PopXL compilation"):
        super(_TaskSessionMethods, self).__init__(*args, **kwargs)
    self.inputs = _streams(inputs, InputStreams)
    self.outputs = _streams(outputs, OutputStreams)
    self.state = state


def _init_34(self: Any, inputs: Any, outputs: Any, state: NamedTensors, max_checkpoints: int = 1,
             *args: Any, **kwargs: Any) -> None:
    _init_30(self, inputs, outputs, state, *args, **kwargs)
    self.session_state = {"steps": 0}
    self._dataloader: Any = None
    self._checkpoints: deque[str] = deque([])
    self._max_checkpoints = max_checkpoints


class _Dataloader:
    """The 3.4 ``dataloader`` property: any object with ``save`` and ``resume`` methods."""

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        if obj is None:
            return self
        if obj._dataloader is None:
            logging.warning("No dataloader set. Checkpoint support is incomplete. You won't be able to resume training.")
        return obj._dataloader

    def __set__(self, obj: Any, dataloader: Any) -> None:
        if not (hasattr(dataloader, "save") and hasattr(dataloader, "resume")):
            raise ValueError("Dataloader must implement save and resume methods")
        obj._dataloader = dataloader


class TaskSession:
    """A popxl Session with the task's streams and state, saving and loading checkpoints (see
    the module docstring)."""

    __init__ = Generational("__init__", {"3.0": _init_30, "3.4": _init_34}, {
        "3.0": "TaskSession(inputs, outputs, state, *args, **kwargs)",
        "3.4": "TaskSession(inputs, outputs, state, max_checkpoints=1, *args, **kwargs)",
    })

    dataloader = OnlyIn("3.4", _Dataloader())

    def _add_session_state_info(self, info: dict[str, Any]) -> None:
        """Add entries to ``session_state`` (saved as json with every checkpoint)."""
        self.session_state.update(info)

    add_session_state_info = OnlyIn("3.4", _add_session_state_info)

    def get_named_tensors_data(self) -> NamedTensorData:
        """Return the state's values from the device, as a NamedTensorData of the same keys."""
        values = self.get_tensors_data(self.state.tensors)
        return NamedTensorData.from_dict({name: values[t] for name, t in self.state.to_dict().items()})

    def load_from_session(self, src: Any, report_missing: ReportMissingMethods = "none") -> None:
        """Write ``src``'s state values into this session's variables of the same keys."""
        loaded = src.get_tensors_data(src.state.tensors)
        _report_missing(src.state.to_dict().keys(), self.state.to_dict().keys(), report_missing, self._word())
        src_dst = src.state.to_mapping(self.state)
        self.write_variables_data({src_dst[t]: data for t, data in loaded.items() if t in src_dst})

    def _wandb_histogram_34(self, name: str, step: int, data: np.ndarray) -> None:
        """Log a histogram of ``data``'s finite values and the count of the others to wandb."""
        _wandb_histogram(name, step, data)

    wandb_histogram = OnlyIn("3.4", _wandb_histogram_34)

    def wandb_variable_histograms(self, step: int = 0) -> None:
        """Log a wandb histogram of every main-graph variable."""
        for t, data in self.get_tensors_data(self.ir.main_graph.variables).items():
            _wandb_histogram(t.name, step, data)

    def _word(self) -> str:
        return "Tensors" if current() == "3.0" else "keys"

    # --- checkpoints, 3.4: a directory ----------------------------------------------------------
    def _save_checkpoint_34(self, checkpoint_dir: str) -> None:
        with timer("Get tensor data from IPU ... "):
            state = self.get_named_tensors_data().to_dict()
        if read_launch().instance_index != 0:
            return
        with timer(f"Saving checkpoint {checkpoint_dir} ... "):
            if checkpoint_dir.startswith("wandb://"):
                import wandb

                name = checkpoint_dir.replace("wandb://", "")
                artifact = wandb.Artifact(name=name, type="checkpoints")
                with tempfile.TemporaryDirectory() as td:
                    os.makedirs(os.path.join(td, "model"), exist_ok=True)
                    self._write_checkpoint_dir(td, state)
                    artifact.add_dir(td)
                wandb.log_artifact(artifact)
                return
            checkpoint_dir = os.path.relpath(os.path.expanduser(checkpoint_dir))
            if checkpoint_dir != "":
                os.makedirs(os.path.join(checkpoint_dir, "model"), exist_ok=True)
            if len(self._checkpoints) >= self._max_checkpoints:
                oldest = self._checkpoints.popleft()
                try:
                    logging.info(f"\t Deleting old checkpoint {oldest} ... ")
                    shutil.rmtree(oldest)
                except OSError as e:
                    print(f"\t Failed to remove {oldest} ", e)
            self._write_checkpoint_dir(checkpoint_dir, state)
            self._checkpoints.append(checkpoint_dir)

    def _write_checkpoint_dir(self, checkpoint_dir: str, state: Mapping[str, np.ndarray]) -> None:
        for name, value in state.items():
            if isinstance(value.base, np.memmap):
                path = value.base.filename
                shutil.copyfile(path, os.path.join(checkpoint_dir, "model", os.path.basename(path)))
            else:
                np.savez(os.path.join(checkpoint_dir, "model", f"{name}.npz"), **{name: value})
        if self.dataloader:
            self.dataloader.save(os.path.join(checkpoint_dir, _DATALOADER_FILENAME))
        with open(os.path.join(checkpoint_dir, _SESSION_FILENAME), "w") as f:
            json.dump(self.session_state, f)

    def _load_checkpoint_34(self, checkpoint_dir: str, report_missing: ReportMissingMethods = "warn",
                            skip_memmap: bool = False) -> None:
        with timer(f"Loading checkpoint {checkpoint_dir} ... "):
            if checkpoint_dir.startswith("wandb://"):
                import wandb

                artifact = wandb.use_artifact(checkpoint_dir.replace("wandb://", ""), type="checkpoints")
                checkpoint_dir = artifact.download()
            self._read_checkpoint_dir(checkpoint_dir, report_missing)

    def _read_checkpoint_dir(self, checkpoint_dir: str, report_missing: ReportMissingMethods) -> None:
        variables = self.state.to_dict()
        files = set(glob.glob(os.path.join(checkpoint_dir, "model", "*.npz")))
        expected = {os.path.join(checkpoint_dir, "model", f"{name}.npz") for name in variables}
        _report_missing(files, expected, report_missing, "keys")
        ckpt: dict[str, np.ndarray] = {}
        for filename in files & expected:
            loaded = np.load(filename, allow_pickle=True)
            ckpt.update({name: loaded[name] for name in loaded.files})
        self.write_variables_data({variables[name]: ckpt[name] for name in variables if name in ckpt})
        if self.dataloader:
            self.dataloader.resume(filename=os.path.join(checkpoint_dir, _DATALOADER_FILENAME))
        try:
            with open(os.path.join(checkpoint_dir, _SESSION_FILENAME)) as f:
                loaded_state = json.load(f)
        except FileNotFoundError:
            loaded_state = {"steps": 0}
        _report_missing(loaded_state.keys(), self.session_state.keys(), report_missing, "keys")
        self.session_state = loaded_state

    # --- checkpoints, 3.0: one npz file ---------------------------------------------------------
    def _save_checkpoint_30(self, file_path: str) -> None:
        ckpt = self.get_named_tensors_data().to_dict()
        if not file_path.startswith("wandb://"):
            _save_npz_30(file_path, ckpt)
            return
        import wandb

        artifact = wandb.Artifact(name=file_path.replace("wandb://", ""), type="ckpt")
        with tempfile.TemporaryDirectory() as td:
            path = os.path.join(td, "state.npz")
            _save_npz_30(path, ckpt)
            artifact.add_file(path)
            wandb.log_artifact(artifact)

    def _load_checkpoint_30(self, file_path: str, report_missing: ReportMissingMethods = "warn") -> None:
        if file_path.startswith("wandb://"):
            import wandb

            wandb.use_artifact(file_path.replace("wandb://", ""), type="ckpt").download()
            # popxl-addons 3.0 then calls a method it does not have
            raise AttributeError("'TaskSession' object has no attribute 'load_checkpoint_from_file'")
        ckpt = np.load(file_path, allow_pickle=True)["ckpt"].item()
        variables = self.state.to_dict()
        _report_missing(ckpt.keys(), variables.keys(), report_missing, "Tensors")
        self.write_variables_data({variables[name]: ckpt[name] for name in set(variables) & set(ckpt)})

    save_checkpoint = Generational("save_checkpoint", {"3.0": _save_checkpoint_30, "3.4": _save_checkpoint_34}, {
        "3.0": "save_checkpoint(file_path): one .npz file",
        "3.4": "save_checkpoint(checkpoint_dir): a directory",
    })
    load_checkpoint = Generational("load_checkpoint", {"3.0": _load_checkpoint_30, "3.4": _load_checkpoint_34}, {
        "3.0": "load_checkpoint(file_path, report_missing='warn')",
        "3.4": "load_checkpoint(checkpoint_dir, report_missing='warn', skip_memmap=False)",
    })

    def run(self, inputs: Mapping[Any, Any] | None = None, downcast_inputs: bool = True) -> dict[Any, np.ndarray]:
        """Run the program once (3.4: counting the run in ``session_state["steps"]``)."""
        if current() != "3.0":
            self.session_state["steps"] += 1
        return super().run(inputs, downcast_inputs)  # type: ignore[misc]


# The methods live in a mixin; the class users get derives from it and from ``popxl.Session``
# as it is when first asked for (a profiler may have replaced popxl.Session by then, and
# popxl-addons' class derives from the Session its import finds), one class per Session class.
_TaskSessionMethods = TaskSession
del TaskSession
_CLASSES: dict[type, type] = {}


def _task_session_class() -> type:
    base = popxl.Session
    cls = _CLASSES.get(base)
    if cls is None:
        cls = _CLASSES[base] = type("TaskSession", (_TaskSessionMethods, base),
                                    {"__module__": __name__, "__doc__": _TaskSessionMethods.__doc__})
    return cls


def _save_npz_30(file_path: str, ckpt: Mapping[str, np.ndarray]) -> None:
    os.makedirs(os.path.dirname(file_path), exist_ok=True)
    np.savez(file_path, ckpt=ckpt)  # type: ignore[arg-type]


def initialise_memmap_dir_from_checkpoint(checkpoint_dir: str, memmap_dir: str) -> None:
    """Copy the memmap files (``model/*.npy``) of a checkpoint into ``memmap_dir``."""
    for f in glob.glob(os.path.join(checkpoint_dir, "model", "*.npy")):
        shutil.copyfile(f, os.path.join(memmap_dir, os.path.basename(f)))


_initialise_memmap_dir_from_checkpoint = initialise_memmap_dir_from_checkpoint
del initialise_memmap_dir_from_checkpoint  # 3.4 only: resolved by __getattr__


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name == "TaskSession":
        return _task_session_class()
    if name == "initialise_memmap_dir_from_checkpoint":
        if current() == "3.0":
            raise AttributeError("module 'popxl_addons.task_session' has no attribute "
                                 "'initialise_memmap_dir_from_checkpoint' (not in popxl-addons 3.0; the 3.4 "
                                 "generation has it: PROFCOMPARE_SIM_ADDONS=3.4 or --addons 3.4)")
        return _initialise_memmap_dir_from_checkpoint
    raise not_supported(f"task_session.{name}")
