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


class _CheckpointLayout:
    """Where a 3.4 checkpoint directory keeps things: ``model/<name>.npz`` per variable (memmap
    files under their own names), ``dataloader.bin`` and ``session_info.json``."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.model_dir = os.path.join(root, "model")
        self.dataloader_file = os.path.join(root, _DATALOADER_FILENAME)
        self.session_file = os.path.join(root, _SESSION_FILENAME)

    def model_file(self, basename: str) -> str:
        return os.path.join(self.model_dir, basename)

    def variable_file(self, name: str) -> str:
        return self.model_file(f"{name}.npz")


def _wandb_name(location: str) -> str | None:
    """The artifact name of a ``wandb://<name>`` location; None for a path."""
    prefix = "wandb://"
    return location.replace(prefix, "") if location.startswith(prefix) else None


def _remove_checkpoint_dir(path: str) -> None:
    """Delete an old checkpoint directory; a failure is printed, not raised."""
    logging.info(f"\t Deleting old checkpoint {path} ... ")
    try:
        shutil.rmtree(path)
    except OSError as error:
        print(f"\t Failed to remove {path} ", error)


def _read_session_state(path: str) -> dict[str, Any]:
    """The saved ``session_state``; ``{"steps": 0}`` when the checkpoint has none."""
    if not os.path.exists(path):
        return {"steps": 0}
    with open(path) as saved:
        return json.load(saved)


def _wandb_histogram(name: str, step: int, data: np.ndarray) -> None:
    import wandb  # type: ignore[import-not-found]

    values = np.ravel(data).astype(np.float32)
    is_finite = np.isfinite(values)
    wandb.log({f"{name}:histogram": wandb.Histogram(values[is_finite]),
               f"{name}:not_finite": np.count_nonzero(~is_finite)}, step=step)


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
        by_tensor = self.get_tensors_data(self.state.tensors)
        return NamedTensorData.from_dict({name: by_tensor[tensor] for name, tensor in self.state.to_dict().items()})

    def load_from_session(self, src: Any, report_missing: ReportMissingMethods = "none") -> None:
        """Write ``src``'s state values into this session's variables of the same keys."""
        source_values = src.get_tensors_data(src.state.tensors)
        _report_missing(src.state.to_dict().keys(), self.state.to_dict().keys(), report_missing, self._word())
        counterpart = src.state.to_mapping(self.state)
        self.write_variables_data({counterpart[tensor]: value for tensor, value in source_values.items()
                                   if tensor in counterpart})

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
        # every instance reads the values (the read may involve collectives); one instance writes
        with timer("Get tensor data from IPU ... "):
            values = self.get_named_tensors_data().to_dict()
        if read_launch().instance_index != 0:
            return
        with timer(f"Saving checkpoint {checkpoint_dir} ... "):
            artifact_name = _wandb_name(checkpoint_dir)
            if artifact_name is not None:
                self._save_to_wandb(artifact_name, values)
            else:
                self._save_to_disk(os.path.relpath(os.path.expanduser(checkpoint_dir)), values)

    def _save_to_wandb(self, artifact_name: str, values: Mapping[str, np.ndarray]) -> None:
        """Upload the checkpoint as a "checkpoints" artifact (never deleted by max_checkpoints)."""
        import wandb

        artifact = wandb.Artifact(name=artifact_name, type="checkpoints")
        with tempfile.TemporaryDirectory() as staging:
            layout = _CheckpointLayout(staging)
            os.makedirs(layout.model_dir, exist_ok=True)
            self._write_checkpoint_dir(layout, values)
            artifact.add_dir(staging)
        wandb.log_artifact(artifact)

    def _save_to_disk(self, target: str, values: Mapping[str, np.ndarray]) -> None:
        """Write the checkpoint under ``target``, first retiring the oldest directory this session
        wrote when ``max_checkpoints`` are already kept (even when it is ``target`` itself)."""
        layout = _CheckpointLayout(target)
        if target:
            os.makedirs(layout.model_dir, exist_ok=True)
        if len(self._checkpoints) >= self._max_checkpoints:
            _remove_checkpoint_dir(self._checkpoints.popleft())
        self._write_checkpoint_dir(layout, values)
        self._checkpoints.append(target)

    def _write_checkpoint_dir(self, layout: _CheckpointLayout, values: Mapping[str, np.ndarray]) -> None:
        for name, array in values.items():
            backing = array.base
            if isinstance(backing, np.memmap):
                # a memory-mapped variable is saved as its file, under the file's own name
                shutil.copyfile(backing.filename, layout.model_file(os.path.basename(backing.filename)))
            else:
                np.savez(layout.variable_file(name), **{name: array})
        dataloader = self.dataloader  # warns when none is set, as popxl-addons does
        if dataloader:
            dataloader.save(layout.dataloader_file)
        with open(layout.session_file, "w") as out:
            json.dump(self.session_state, out)

    def _load_checkpoint_34(self, checkpoint_dir: str, report_missing: ReportMissingMethods = "warn",
                            skip_memmap: bool = False) -> None:
        with timer(f"Loading checkpoint {checkpoint_dir} ... "):
            artifact_name = _wandb_name(checkpoint_dir)
            if artifact_name is not None:
                import wandb

                checkpoint_dir = wandb.use_artifact(artifact_name, type="checkpoints").download()
            self._read_checkpoint_dir(_CheckpointLayout(checkpoint_dir), report_missing)

    def _read_checkpoint_dir(self, layout: _CheckpointLayout, report_missing: ReportMissingMethods) -> None:
        by_name = self.state.to_dict()
        file_of = {name: layout.variable_file(name) for name in by_name}
        present = set(glob.glob(layout.model_file("*.npz")))
        _report_missing(present, set(file_of.values()), report_missing, "keys")
        arrays: dict[str, np.ndarray] = {}
        for path in present.intersection(file_of.values()):
            archive = np.load(path, allow_pickle=True)
            for key in archive.files:
                arrays[key] = archive[key]
        self.write_variables_data({tensor: arrays[name] for name, tensor in by_name.items() if name in arrays})

        dataloader = self.dataloader
        if dataloader:
            dataloader.resume(filename=layout.dataloader_file)
        restored = _read_session_state(layout.session_file)
        _report_missing(restored.keys(), self.session_state.keys(), report_missing, "keys")
        self.session_state = restored

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
    for memmap_file in glob.glob(_CheckpointLayout(checkpoint_dir).model_file("*.npy")):
        shutil.copy(memmap_file, memmap_dir)


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
