"""What differs between the two sides of a comparison besides their figures: their configuration.

A comparison means something only when the two reports differ in what was meant to differ (the
layout under study) and in nothing else that moves the figures. :func:`config_differences` lists
every setting whose value differs between two reports' metadata, split in two kinds:

- ``intended``: the layout knobs, what a variant chooses -- the variant itself, where the optimizer
  state lives, replicated tensor sharding and its threshold, phased execution, recomputation,
  replicas (data- and tensor-parallel), IPUs per replica, I/O tiles, the matmuls' available
  memory proportion, and any other key of ``meta.layout``;
- ``unexpected``: everything else -- the workload, the model size, the batch, the seed, the SDK
  or simulator version, the target, the execution mode, the popxl-addons generation, the
  instrumentation (which profiles were recorded), session and engine options, any other knob.

Where the settings are read (:class:`profcompare.model.ReportMeta`): ``variant``, ``workload``,
``producer``, ``simulated``, ``target`` (its ``num_ipus`` is left out: replicas x IPUs per
replica), ``samples_per_step``, ``execution``, ``addons_generation``, ``capabilities``,
``replication["io_tiles_per_ipu"]``; ``layout``, ``config`` and ``session_options`` only when both
sides record them (a side without them cannot say, and a list of every knob against "not
recorded" would hide what matters). When both sides record a layout, the knobs it resolves
(``state``, ``sharded_threshold``, ``replicas``, ``tp``, ``dp``, ``io_tiles``, ``amp``,
``recompute``) are read from it, not from ``config``, whose raw values (``state=variant``) say
less. A setting with several sources (replicas: the target, the layout, the config) is one row,
from the first source that has it. An optional field one side does not record (an older store's
popxl-addons generation) is no difference; a layout key, knob or option one side does not set
(the RTS threshold of an unsharded variant) is one, "not set" on that side. Samples per step
that differ only with the data-parallel replicas (the same share per replica) are intended.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from profcompare.model import ReportMeta

#: The columns of :func:`config_differences`, in order.
COLUMNS: tuple[str, ...] = ("setting", "base", "new", "kind", "moves_figures", "note")
#: Values of the ``kind`` column, in the order rows are listed.
KINDS: tuple[str, ...] = ("intended", "unexpected")


@dataclass(frozen=True)
class Setting:
    """What profcompare knows of one setting: its kind, whether a difference in it can move memory
    or time figures, the sentence that says what it moves, and how its value reads."""

    kind: str
    moves_figures: bool
    note: str
    #: how a value reads (None: :func:`_plain`)
    format: Callable[[Any], str] | None = None

    def text(self, value: Any) -> str:
        """``value`` as a user reads it."""
        return (self.format or _plain)(value)


def _plain(value: Any) -> str:
    """A value as a user reads it: on/off for booleans, numbers without trailing zeros, nested
    mappings as ``key=value`` pairs."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_plain(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(v) for v in value) or "none"
    return str(value) if value != "" else "(empty)"


def _state_text(value: Any) -> str:
    return {"onchip": "on chip", "offchip": "Streaming Memory", "variant": "the variant's choice"}.get(
        str(value), str(value))


def _recompute_text(value: Any) -> str:
    return {"variant": "the variant's choice"}.get(str(value), _plain(value))


def _grouped(value: Any) -> str:
    return f"{int(value):,}" if isinstance(value, (int, float)) and not isinstance(value, bool) else _plain(value)


def _bytes_text(value: Any) -> str:
    return f"{int(value):,} B"


def _clock_text(value: Any) -> str:
    return f"{float(value) / 1e9:.4g} GHz"


def _elements_text(value: Any) -> str:
    return f"{int(value):,} elements" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


_MOVES_MODEL = "the model's size sets the bytes of every weight, gradient and optimizer state and the compute time"

#: Every setting profcompare knows, intended ones first, in the order rows are listed.
SETTINGS: Mapping[str, Setting] = {
    # intended: the layout under study
    "variant": Setting("intended", True, "The variant names the layout under study."),
    "optimizer state": Setting("intended", True, "Where the optimizer state lives: tile memory (on chip) or "
                               "Streaming Memory; moves always-live and Streaming Memory bytes.", _state_text),
    "replicated tensor sharding": Setting("intended", True, "Whether the optimizer state and its update are "
                                          "sharded over the replicas (RTS): each replica holds a slice."),
    "RTS threshold": Setting("intended", True, "Tensors with at least this many elements are sharded over "
                             "the replicas.", _elements_text),
    "phased execution": Setting("intended", True, "Whether weights and accumulators live in Streaming Memory "
                                "and are loaded layer by layer."),
    "recomputation": Setting("intended", True, "Whether layers recompute their activations in the backward "
                             "pass: less activation memory, more compute.", _recompute_text),
    "replicas": Setting("intended", True, "Copies of the program on their own IPUs; per-replica figures change "
                        "with the share of the batch and of sharded state each holds."),
    "tensor-parallel replicas": Setting("intended", True, "Replicas that split every layer's weights between "
                                        "them."),
    "data-parallel replicas": Setting("intended", True, "Replicas that each train on their own share of the "
                                      "batch."),
    "IPUs per replica": Setting("intended", True, "IPUs one replica spans: tile memory per replica and the "
                                "exchange between IPUs change."),
    "I/O tiles per IPU": Setting("intended", True, "Tiles set aside for host and Streaming Memory transfers, "
                                 "taken away from compute."),
    "matmul available memory proportion": Setting("intended", True, "The share of tile memory matmuls may use "
                                                  "for temporaries: moves not-always-live bytes and compute time."),
    # unexpected: what should be the same on both sides
    "workload": Setting("unexpected", True, "A different workload is a different program: every figure moves."),
    "backend": Setting("unexpected", True, "Simulated figures are modelled, profiled ones measured: a "
                       "difference between them is partly the model's."),
    "producer": Setting("unexpected", True, "Another SDK or simulator version can compile the same program "
                        "differently: memory and time can move."),
    "IPU architecture": Setting("unexpected", True, "Another IPU has other tile memory, tiles and clock: every "
                                "figure can move."),
    "tiles per IPU": Setting("unexpected", True, "Tiles per IPU set how tensors spread: memory per tile and "
                             "time move.", _grouped),
    "bytes per tile": Setting("unexpected", True, "The tile memory budget: which tiles are over budget, and "
                              "whether the program fits, move.", _bytes_text),
    "clock": Setting("unexpected", True, "The clock converts cycles to seconds: time figures move, memory does "
                     "not.", _clock_text),
    "samples per step": Setting("unexpected", True, "Samples one step consumes: throughput (samples/s) moves, "
                                "and with it the batch's memory and time.", _grouped),
    "execution mode": Setting("unexpected", False, "Compile-only runs compute no values: memory and time are "
                              "modelled the same, but the losses are not comparable."),
    "popxl-addons generation": Setting("unexpected", True, "The popxl-addons API the workload spoke: its "
                                       "graphs, and so memory and time, can differ."),
    "instrumentation": Setting("unexpected", True, "Which profiles were recorded: a side without an execution "
                               "profile has no time figures, and Poplar's instrumentation costs cycles."),
    # workload knobs
    "hidden": Setting("unexpected", True, f"The hidden size: {_MOVES_MODEL}."),
    "layers": Setting("unexpected", True, f"The number of layers: {_MOVES_MODEL}."),
    "heads": Setting("unexpected", True, "The attention heads: the shapes of attention, its memory and time, "
                     "move."),
    "seq": Setting("unexpected", True, "The sequence length: activation bytes and compute time move."),
    "vocab": Setting("unexpected", True, f"The vocabulary size: {_MOVES_MODEL}."),
    "micro_batch": Setting("unexpected", True, "The micro-batch: activation bytes and compute time per step "
                           "move."),
    "grad_accum": Setting("unexpected", True, "Micro-batches accumulated per weight update: time per step "
                          "moves."),
    "device": Setting("unexpected", True, "The IPU hardware or the IPU Model: another target."),
    "seed": Setting("unexpected", False, "The seed moves the initial weights, the synthetic data and so the "
                    "losses; memory and time figures do not depend on it."),
    "lr": Setting("unexpected", False, "The learning rate moves the losses, not memory or time."),
    "steps": Setting("unexpected", False, "How many weight updates ran: the losses differ, figures per step "
                     "do not."),
    "data": Setting("unexpected", False, "The training data moves the losses; profiles do not depend on the "
                    "input values.", lambda value: str(value) or "synthetic"),
}

#: Samples per step when they changed with the data-parallel replicas only (same per replica)
_SAMPLES_WITH_REPLICAS = Setting("intended", True, "Samples one step consumes: they change with the "
                                 "data-parallel replicas, each replica's share is the same.", _grouped)
#: A layout key the workload declares but profcompare does not know (intended, can move figures).
_OTHER_LAYOUT = Setting("intended", True, "A layout setting the workload declares.")
#: A knob profcompare does not know: it may move the figures.
_OTHER_KNOB = Setting("unexpected", True, "A knob profcompare does not know: it may move the figures.")
_SESSION_OPTION = Setting("unexpected", True, "A session option: it can change how the program compiles and "
                          "runs, so memory and time can move.")
_ENGINE_OPTION = Setting("unexpected", True, "An engine option handed to Poplar: it can change the compiled "
                         "program, its memory and its time.")

#: ``meta.layout`` key -> setting
_LAYOUT_NAMES: Mapping[str, str] = {
    "optimizer_state": "optimizer state",
    "rts": "replicated tensor sharding",
    "sharded_threshold": "RTS threshold",
    "phased": "phased execution",
    "recompute": "recomputation",
    "replicas": "replicas",
    "tp": "tensor-parallel replicas",
    "dp": "data-parallel replicas",
    "io_tiles": "I/O tiles per IPU",
    "amp": "matmul available memory proportion",
}
#: ``meta.config`` knob -> setting, for the knobs a layout resolves (read from the config only
#: when the two sides do not both record a layout)
_KNOB_NAMES: Mapping[str, str] = {
    "state": "optimizer state",
    "sharded_threshold": "RTS threshold",
    "recompute": "recomputation",
    "replicas": "replicas",
    "tp": "tensor-parallel replicas",
    "dp": "data-parallel replicas",
    "io_tiles": "I/O tiles per IPU",
    "amp": "matmul available memory proportion",
}
#: Settings read from optional fields of the meta: a side without one does not record it (an older
#: store, a Poplar profile), which says nothing of its value, so no row is listed. A layout key,
#: knob or option set on one side only is listed ("not set" on the other).
_UNKNOWN_WHEN_MISSING = frozenset({"variant", "workload", "samples per step", "popxl-addons generation",
                                   "I/O tiles per IPU"})
#: session options that are a setting of their own
_SESSION_NAMES: Mapping[str, str] = {"numIOTiles": "I/O tiles per IPU"}
_AMP_OPTION = ("matmulOptions", "availableMemoryProportion")
#: optional tables whose presence says how the program was instrumented
_INSTRUMENTED = {"execution": "execution profile", "trace": "execution trace"}


def _settings(meta: ReportMeta, *, layout: bool, config: bool, session: bool) -> dict[str, tuple[Any, Setting]]:
    """Every setting ``meta`` records: name -> (value, what is known of it). ``layout``,
    ``config`` and ``session`` say whether to read those mappings (both sides record them)."""
    found: dict[str, tuple[Any, Setting]] = {}

    def put(name: str, value: Any, known: Setting | None = None) -> None:
        if value is not None and name not in found:
            found[name] = (value, known or SETTINGS[name])

    target = meta.target
    put("variant", meta.variant)
    put("replicas", int(target.num_replicas))
    put("IPUs per replica", int(target.ipus_per_replica))
    put("I/O tiles per IPU", meta.replication.get("io_tiles_per_ipu"))
    if layout:
        for key, value in meta.layout.items():
            if key in _LAYOUT_NAMES:
                put(_LAYOUT_NAMES[key], value)
            else:
                put(key, value, _OTHER_LAYOUT)
    put("workload", meta.workload)
    put("backend", "simulator" if meta.simulated else "Poplar profile")
    put("producer", meta.producer)
    put("IPU architecture", target.architecture)
    put("tiles per IPU", int(target.tiles_per_ipu))
    put("bytes per tile", int(target.bytes_per_tile))
    put("clock", float(target.clock_hz))
    put("samples per step", meta.samples_per_step)
    put("execution mode", meta.execution)
    put("popxl-addons generation", meta.addons_generation)
    recorded = [words for table, words in _INSTRUMENTED.items() if table in meta.capabilities]
    put("instrumentation", ", ".join(recorded) or "none")
    if config:
        for key, value in meta.config.items():
            if key in _KNOB_NAMES:
                if not layout:
                    put(_KNOB_NAMES[key], value)
                continue
            put(key, value, SETTINGS.get(key, _OTHER_KNOB))
    if session:
        _session_settings(meta.session_options, put)
    return found


def _session_settings(options: Mapping[str, Any], put: Callable[..., None]) -> None:
    """The settings of PopART session options: numIOTiles and the matmuls' available memory
    proportion as settings of their own, every other option (and every entry of a dict option)
    as one row each."""
    for option, value in options.items():
        if option in _SESSION_NAMES:
            put(_SESSION_NAMES[option], value)
        elif isinstance(value, Mapping):
            for key, entry in value.items():
                if (option, key) == _AMP_OPTION:
                    put("matmul available memory proportion", _number(entry))
                elif option == "engineOptions":
                    put(f"engine option {key}", entry, _ENGINE_OPTION)
                else:
                    put(f"session option {option}.{key}", entry, _SESSION_OPTION)
        else:
            put(f"session option {option}", value, _SESSION_OPTION)


def _batch_follows_replicas(base: ReportMeta, new: ReportMeta) -> bool:
    """True when both sides' samples per step differ yet agree per data-parallel replica (the
    layout's ``dp``, else every replica): the batch grew or shrank with the replicas."""
    per_replica = []
    for meta in (base, new):
        if meta.samples_per_step is None:
            return False
        replicas = meta.layout.get("dp", meta.target.num_replicas)
        per_replica.append(meta.samples_per_step / replicas if replicas else None)
    return base.samples_per_step != new.samples_per_step and per_replica[0] == per_replica[1]


def _number(value: Any) -> Any:
    """A number given as text (dict session options hold strings) as a float, else ``value``."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def _same(base: Any, new: Any) -> bool:
    if isinstance(base, bool) != isinstance(new, bool):
        return False
    try:
        return bool(base == new)
    except (TypeError, ValueError):
        return _plain(base) == _plain(new)


def config_differences(base: ReportMeta, new: ReportMeta) -> pd.DataFrame:
    """One row per setting whose value differs between ``base`` and ``new`` (see the module
    docstring for which settings and where they are read).

    Columns: ``setting`` (str), ``base`` and ``new`` (object: the value as a user reads it, e.g.
    "on chip", "512 elements", "1.33 GHz"; None where that side does not set it: a layout key,
    knob or option of the other side only),
    ``kind`` ("intended" | "unexpected"), ``moves_figures`` (bool: the difference can move memory
    or time figures; the seed, the learning rate, the steps, the data and the execution mode do
    not), ``note`` (one sentence: what the setting is or what it moves). Intended rows first, then
    unexpected ones, each in :data:`SETTINGS` order, then the settings it does not name in the
    order the reports hold them (knobs in the workload's order, then session options).
    Empty (with these columns) when nothing differs.
    """
    both = {name: bool(getattr(base, name)) and bool(getattr(new, name))
            for name in ("layout", "config", "session_options")}
    sides = [_settings(meta, layout=both["layout"], config=both["config"], session=both["session_options"])
             for meta in (base, new)]
    if _batch_follows_replicas(base, new):
        for side in sides:
            side["samples per step"] = (side["samples per step"][0], _SAMPLES_WITH_REPLICAS)
    order = {name: position for position, name in enumerate(SETTINGS)}
    rows: list[dict[str, Any]] = []
    for seen, name in enumerate(dict.fromkeys([*sides[0], *sides[1]])):
        old, now = sides[0].get(name), sides[1].get(name)
        if old is not None and now is not None and _same(old[0], now[0]):
            continue
        if (old is None or now is None) and name in _UNKNOWN_WHEN_MISSING:
            continue  # one side cannot say: not a difference anyone chose
        known = old[1] if old is not None else now[1]  # type: ignore[index]  # one side has it
        rows.append({
            "setting": name,
            "base": None if old is None else known.text(old[0]),
            "new": None if now is None else known.text(now[0]),
            "kind": known.kind,
            "moves_figures": known.moves_figures,
            "note": known.note,
            "_order": (KINDS.index(known.kind), order.get(name, len(order) + seen)),
        })
    rows.sort(key=lambda row: row.pop("_order"))
    # object columns built as such: pandas would read the text as its string dtype, None as NaN
    return pd.DataFrame({column: pd.Series([row[column] for row in rows],
                                           dtype=bool if column == "moves_figures" else object)
                         for column in COLUMNS})


def config_warnings(differences: pd.DataFrame) -> tuple[str, ...]:
    """One sentence per unexpected difference that can move the figures, in the order of
    ``differences`` (a :func:`config_differences` frame): the setting, both values and the note."""
    sentences = []
    for row in differences.itertuples(index=False):
        if row.kind != "unexpected" or not row.moves_figures:
            continue
        base = "not set" if row.base is None else row.base
        new = "not set" if row.new is None else row.new
        sentences.append(f"{_upper_first(str(row.setting))} differs ({base} in base, {new} in new); "
                         f"{_lower_first(str(row.note))}")
    return tuple(sentences)


def _upper_first(setting: str) -> str:
    """``setting`` with its first letter in upper case, unless its first word is a knob's or an
    option's own spelling (``micro_batch``, ``opt.x``), which stays as the user types it."""
    first = setting.split(" ", 1)[0]
    if "_" in first or "." in first:
        return setting
    return setting[:1].upper() + setting[1:]


def _lower_first(sentence: str) -> str:
    """``sentence`` with its first letter in lower case, unless its first word is a name (RTS,
    IPU, Poplar's)."""
    first = sentence.split(" ", 1)[0]
    if any(ch.isupper() for ch in first[1:]):
        return sentence
    return sentence[:1].lower() + sentence[1:]


__all__ = ["COLUMNS", "KINDS", "SETTINGS", "Setting", "config_differences", "config_warnings"]
