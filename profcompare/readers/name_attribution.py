"""Attribution of Poplar variables to model parameters from their names (the pva reader).

A Poplar profile does not say which model variable a tensor belongs to, but popxl names carry
it: popxl-addons modules name their variables by dotted keys (``fc1.weight``), gradient
accumulation names accumulators ``accum.<key>`` (plus one shared ``mean_accum_counter``), and
optimizer state is named after its variable (``adam.fc1.weight.first_order``). Tensors inside
a called graph are scoped by the graph id (``Adam_subgraph(2)/first_order``), name scopes are
joined with ``/`` and PopART suffixes repeated ids with ``__t<n>``.

The rules (docs/pva-adapter.md, "Attribution from names"), applied to each name:

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

#: a parameter-shaped name: identifier components joined by dots (``fc1.weight``, ``layers.0.qkv.weight``)
_PARAMETER = re.compile(r"^[A-Za-z_]\w*(?:\.\w+)*$")
_REPEAT_SUFFIX = re.compile(r"(?:__t\d+)+$")
_GRAPH_ID = re.compile(r"^.+\(\d+\)$")
_GRADIENT = "Gradient___"
_OPTIMIZER_PREFIXES = frozenset({"adam", "lamb", "sgd", "optimizer", "optim"})
_WHICH = ("first_order", "second_order")
_PARAMETER_LEAVES = frozenset({"weight", "bias"})


@dataclass(frozen=True)
class _Parsed:
    name: str  # normalised dotted name
    scoped: bool  # inside a called graph
    repeated: bool  # PopART gave it a __t<n> suffix: another tensor of the same name
    staging: bool  # a remote load's output
    host_input: bool  # a host load's output
    role: str  # role recognised by rule 2, "" when none
    parameter: str  # the x of rule 2 ("" when none)
    which: str


def _parse(raw: str) -> _Parsed:
    name = _REPEAT_SUFFIX.sub("", raw)
    repeated = name != raw
    staging = name.endswith("_remote_loaded")
    if staging:
        name = _REPEAT_SUFFIX.sub("", name[: -len("_remote_loaded")])
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
    elif name == "mean_accum_counter":
        role = "accumulator"
    elif name.startswith("accum."):
        role, parameter = "accumulator", name[len("accum."):]
    else:
        components = name.split(".")
        prefixed = bool(components) and components[0].lower() in _OPTIMIZER_PREFIXES
        found = [c for c in components if c in _WHICH or (prefixed and c == "step")]
        if len(found) == 1:
            which = found[0]
            rest = [c for c in components if c != which and c.lower() not in _OPTIMIZER_PREFIXES]
            role, parameter = "optimizer_state", ".".join(rest)
    return _Parsed(name, scoped, repeated, staging, host_input, role, parameter, which)


def attribute_names(names: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """Attribute each Poplar variable name to a model parameter by the module's rules.

    Returns three lists as long as ``names``: parameter ("" when none), role
    (:data:`profcompare.model.ROLES`) and which (first_order | second_order | step for
    optimizer state, else ""). Unattributable names get parameter "" and role "other".
    Linear in the number of names.
    """
    parsed = [_parse(str(n)) for n in names]
    # a gradient's x is no evidence of a parameter: PopART names activations' gradients alike
    known: set[str] = {p.parameter for p in parsed
                       if p.role != "gradient" and p.parameter and _PARAMETER.match(p.parameter)}
    known.update(p.name for p in parsed if not (p.scoped or p.repeated or p.staging or p.host_input or p.role)
                 and _PARAMETER.match(p.name)
                 and "." in p.name and p.name.rsplit(".", 1)[1] in _PARAMETER_LEAVES)
    parameters: list[str] = []
    roles: list[str] = []
    whichs: list[str] = []
    for p in parsed:
        parameter, role, which = "", "other", ""
        if p.role == "accumulator" and not p.parameter:
            role = "accumulator"  # the shared mean_accum_counter: every weight's, no one's
        elif p.role and p.parameter in known:
            parameter, role, which = p.parameter, p.role, p.which
        elif not p.role and p.name in known:
            parameter, role = p.name, ("weight_copy" if p.scoped or p.repeated else "weight")
        elif p.host_input and not p.role:
            role = "activation"
        if p.staging and parameter:
            role, which = "remote_staging", ""
        parameters.append(parameter)
        roles.append(role)
        whichs.append(which)
    return parameters, roles, whichs


__all__ = ["attribute_names"]
