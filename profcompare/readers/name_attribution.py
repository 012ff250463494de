"""Attribution of Poplar variables to model parameters from their names (the pva reader).

A Poplar profile does not say which model variable a tensor belongs to, but popxl names carry
it: popxl-addons modules name their variables by dotted keys (``fc1.weight``), gradient
accumulation names accumulators ``accum.<key>`` (plus one shared ``mean_accum_counter``), and
optimizer state is named after its variable (``adam.fc1.weight.first_order``). Tensors inside
a called graph are scoped by the graph id (``Adam_subgraph(2)/first_order``), name scopes are
joined with ``/`` and PopART suffixes repeated ids with ``__t<n>``.

The rules (docs/pva-adapter.md, "Attribution from names", which also covers popxl-addons'
phased naming: factory groups fwd / bwd / optim, keys without their layer inside load graphs,
``__sharded`` shards; the summary below is of the base rules), applied to each name:

1. Normalise: drop a trailing ``__t<n>`` (PopART's repeat counter), ``_remote_loaded``
   (remembered: remote staging) and ``_hostload`` (remembered: host input); a first
   ``/``-component that is a graph id (ends with ``(<n>)``) is the graph scope (remembered);
   the other ``/``-components (name scopes) are joined with ``.``.
2. Recognise the role from the normalised name ``n``:
   ``Gradient___<x>`` -> gradient of ``x``; ``accum.<x>`` -> accumulator of ``x``;
   ``mean_accum_counter`` -> accumulator of no parameter (shared by every weight);
   a component ``first_order`` / ``second_order`` (or ``step`` after an optimizer prefix
   ``adam`` / ``lamb`` / ``sgd`` / ``optimizer``) -> optimizer_state with that ``which``, of
   what the other components (optimizer prefixes removed) name.
3. The *known parameters* are every ``x`` of an accumulator or optimizer state, plus every
   plain (unscoped, unsuffixed) dotted name whose last component is ``weight`` or ``bias`` (how
   popxl-addons layers name their parameters); a gradient's ``x`` must be known by these (PopART names the
   gradients of activations the same way). A role of rule 2 counts only when its ``x`` is known.
4. A name whose ``n`` is a known parameter is that parameter: ``weight`` outside a graph scope,
   ``weight_copy`` inside one (a called graph's input copy) or with a ``__t<n>`` suffix (another
   tensor named after it); with ``_remote_loaded`` any attributed name is ``remote_staging``. ``_hostload`` names are ``activation`` (host input
   data, no parameter).
5. Everything else -- and a role of rule 2 whose ``x`` is not a parameter-shaped name -- is
   *unattributed*: parameter ``""``, role ``other``, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from profcompare.readers.parameter_names import family

#: a parameter-shaped name: identifier components joined by dots (``fc1.weight``, ``layers.0.qkv.weight``)
_PARAMETER = re.compile(r"^[A-Za-z_]\w*(?:\.\w+)*$")
_REPEAT_SUFFIX = re.compile(r"(?:__t\d+)+$")
_GRAPH_ID = re.compile(r"^.+\(\d+\)(?:_[A-Za-z]\w*)?$")  # a graph id, a gradient graph's "..._bwd" too
_GRADIENT = "Gradient___"
_OPTIMIZER_PREFIXES = frozenset({"adam", "lamb", "sgd", "optimizer", "optim"})
_WHICH = ("first_order", "second_order")
_PARAMETER_LEAVES = frozenset({"weight", "bias"})
#: popxl-addons' groups of a phased program's variable factories (``decoder.0.fwd.<key>``,
#: ``decoder.0.optim.<key>.first_order``, ``bwd.accum.<key>``): not part of the parameter's key
_GROUPS = frozenset({"fwd", "bwd", "optim"})
_STAGING_SUFFIXES = ("_remote_loaded", "_remote_load")
_SHARD_SUFFIX = "__sharded"


@dataclass(frozen=True)
class _Parsed:
    name: str  # normalised dotted name
    scoped: bool  # inside a called graph
    repeated: bool  # PopART gave it a __t<n> suffix: another tensor of the same name
    staging: bool  # a remote load's output
    sharded: bool  # a replica-sharded variable's shard (``__sharded``)
    host_input: bool  # a host load's output
    role: str  # role recognised by rule 2, "" when none
    parameter: str  # the x of rule 2 ("" when none)
    which: str


def _parse(raw: str) -> _Parsed:
    name = _REPEAT_SUFFIX.sub("", raw)
    repeated = name != raw
    staging = False
    for suffix in _STAGING_SUFFIXES:
        if name.endswith(suffix):
            staging = True
            name = _REPEAT_SUFFIX.sub("", name[: -len(suffix)])
            break
    sharded = name.endswith(_SHARD_SUFFIX)
    if sharded:
        name = name[: -len(_SHARD_SUFFIX)]
    host_input = name.endswith("_hostload")
    if host_input:
        name = name[: -len("_hostload")]
    parts = name.split("/")
    scoped = len(parts) > 1 and bool(_GRAPH_ID.match(parts[0]))
    if scoped:
        parts = parts[1:]
    name = ".".join(p for p in parts if p)
    role, parameter, which = "", "", ""
    if name.startswith(_GRADIENT):
        role, parameter = "gradient", name[len(_GRADIENT):]
    elif name == "mean_accum_counter" or name.endswith(".mean_accum_counter"):
        role = "accumulator"
    elif "accum" in name.split(".")[:-1]:
        # accum.<key>, and popxl-addons' phased <layer>.bwd.accum.<key>: every accum (and group)
        # component dropped
        role = "accumulator"
        parameter = ".".join(c for c in name.split(".") if c != "accum" and c not in _GROUPS)
    else:
        components = name.split(".")
        prefixed = any(c.lower() in _OPTIMIZER_PREFIXES for c in components)
        found = [c for c in components if c in _WHICH or (prefixed and c == "step")]
        if len(found) == 1:
            which = found[0]
            rest = [c for c in components if c != which and c.lower() not in _OPTIMIZER_PREFIXES]
            role, parameter = "optimizer_state", ".".join(rest)
    return _Parsed(name, scoped, repeated, staging, sharded, host_input, role, parameter, which)


def attribute_names(names: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """Attribute each Poplar variable name to a model parameter by the module's rules.

    Returns three lists as long as ``names``: parameter ("" when none), role
    (:data:`profcompare.model.ROLES`) and which (first_order | second_order | step for
    optimizer state, else ""). Unattributable names get parameter "" and role "other".
    Linear in the number of names.
    """
    parsed = [_parse(str(n)) for n in names]
    # plain weights first: a state or accumulator named by a group-free key is theirs
    plain = {p.name for p in parsed if not (p.scoped or p.repeated or p.staging or p.sharded or p.host_input
                                            or p.role)
             and _PARAMETER.match(p.name) and "." in p.name and p.name.rsplit(".", 1)[1] in _PARAMETER_LEAVES}
    by_key: dict[tuple[str, ...], set[str]] = {}
    for name in plain:
        by_key.setdefault(_key(name), set()).add(name)
    resolved: dict[str, str] = {}

    def canonical(x: str) -> str:
        """The plain weight ``x`` names (its group-free key), else ``x``."""
        if x not in resolved:
            matches = by_key.get(_key(x), set())
            resolved[x] = x if x in plain or len(matches) != 1 else next(iter(matches))
        return resolved[x]

    # a gradient's x is no evidence of a parameter: PopART names activations' gradients alike
    evidence = [p for p in parsed if p.role != "gradient" and p.parameter and _PARAMETER.match(p.parameter)]
    known: set[str] = set(plain)
    known.update(canonical(p.parameter) for p in evidence if not (p.scoped or p.staging))
    suffixes = _SuffixIndex(known)
    # inside a graph (a load / store graph) a key may lack its layer prefix: it names the
    # parameters it is a tail of, and only when none is known does it name one of its own
    known.update(canonical(p.parameter) for p in evidence if (p.scoped or p.staging)
                 and canonical(p.parameter) not in known and not suffixes.family(p.parameter))
    suffixes = _SuffixIndex(known)
    parameters: list[str] = []
    roles: list[str] = []
    whichs: list[str] = []
    for p in parsed:
        parameter, role, which = "", "other", ""
        x = canonical(p.parameter) if p.role and p.parameter else ""
        if p.role == "accumulator" and not p.parameter:
            role = "accumulator"  # the shared mean_accum_counter: every weight's, no one's
        elif p.role and x in known:
            parameter, role, which = x, p.role, p.which
        elif (p.role and x and (p.scoped or p.staging) and suffixes.family(x)
              and (p.role != "gradient" or x.rsplit(".", 1)[-1] in _PARAMETER_LEAVES)):
            # inside a load / store graph the layer prefix is not in the name: the layers' family
            parameter, role, which = suffixes.family(x), p.role, p.which
        elif not p.role and canonical(p.name) in known:
            parameter = canonical(p.name)
            role = "weight_copy" if p.scoped or p.repeated or parameter != p.name else "weight"
        elif not p.role and (p.scoped or p.staging) and suffixes.family(p.name):
            parameter, role = suffixes.family(p.name), "weight_copy"
        elif p.host_input and not p.role:
            role = "activation"
        if p.sharded and parameter and role in ("weight", "weight_copy"):
            role = "shard"
        if p.staging and parameter:
            role, which = "remote_staging", ""
        parameters.append(parameter)
        roles.append(role)
        whichs.append(which)
    return parameters, roles, whichs


def _key(name: str) -> tuple[str, ...]:
    """A parameter's key: its dotted components without popxl-addons' groups (fwd, bwd, optim)."""
    return tuple(c for c in name.split(".") if c not in _GROUPS)


class _SuffixIndex:
    """Known parameters by the tails of their keys (``attention.qkv.weight`` ->
    ``decoder.0.fwd.attention.qkv.weight``, ``decoder.1...``), for names inside a graph that
    carry a parameter's key without its layer prefix. Only tails of two components or more."""

    def __init__(self, known: set[str]) -> None:
        self._tails: dict[tuple[str, ...], set[str]] = {}
        for name in known:
            key = _key(name)
            for start in range(len(key) - 1):
                self._tails.setdefault(key[start:], set()).add(name)
        self._memo: dict[str, str] = {}

    def family(self, name: str) -> str:
        """The family (parameter_names.family) of the known parameters whose key ends with
        ``name``'s key; "" when none or no family."""
        if name not in self._memo:
            key = _key(name)
            self._memo[name] = family(self._tails.get(key, ())) if len(key) >= 2 else ""
        return self._memo[name]


__all__ = ["attribute_names"]
