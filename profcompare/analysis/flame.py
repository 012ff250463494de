"""Flame rows of an execution trace: the programs that enclose an IPU's blocks, as spans in time.

A flame span is one execution of an enclosing program (a Sequence, Repeat, Call, an op's group):
from its first block's start to its last block's end, at its depth in the program tree (0 for the
outermost). Spans are the union of their blocks, so a span always covers the spans nested in it.
No I/O, no plotting; the chart and the notebook figure draw what :func:`flame_spans` returns.

How a block is linked to its enclosing programs. The trace's ``parent`` column is the link every
reader writes from the block itself (the simulator: the op's group; Graph Analyser's cache: the
nearest group it draws), so it is the anchor. The program tree (``Report.programs``) has no
block ids, only names, and a name can occur many times (an op's name in each graph that has it;
a step's name in each op), so the tree is used only for the levels above that anchor:

- a block with a ``parent`` sits in the group of that name; its enclosing programs are the tree's
  programs above the outermost program of that name (one with children when there is one). With
  no program tree, or a name the tree does not hold, the group is at the top level (Graph
  Analyser's cache keeps only the nearest group, so its trace gives one level);
- a block without a ``parent`` (pva's trace) is looked up by its ``program`` name: its enclosing
  programs are those above the tree's program of that name; a name the tree lacks is top level;
- a program named as the program enclosing it (the simulator's op group and the op's Call step)
  is one level with it;
- when a name has several places in the tree, a run of blocks of it takes the place that shares
  the most enclosing programs with the run before it (the first such place in tree order on a
  tie): an op inside a called graph follows the call whose copies ran just before it.

What is left out: SyncAns blocks (they overlap the blocks they wait for, so they would stretch
or split their groups); levels deeper than ``max_depth``. One execution is told from the next
only when something else runs between them: consecutive runs of the same program (a Repeat of a
single Sequence) read as one span.

Cost: numpy over the blocks (factorize, run starts, reduceat per level); Python work is per
distinct name, per tree row and per run of blocks of a name with several places in the tree
(about 0.1 s for a 100,000-block IPU: benchmarks/bench_html.py).
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd

from profcompare.analysis.trace import WAITING_TYPE

#: Levels of enclosing programs drawn, from the outermost down.
MAX_FLAME_DEPTH = 4

#: Columns of :func:`flame_spans`.
FLAME_COLUMNS = ("depth", "cycles_from", "cycles_to", "name", "blocks")

Chain = tuple[str, ...]


def _empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object if c == "name" else "int64") for c in FLAME_COLUMNS})


def _tree_places(programs: pd.DataFrame) -> tuple[dict[str, list[Chain]], dict[str, list[Chain]]]:
    """Per program name, in tree order: the chains of enclosing names of its programs (``above``)
    and, for the outermost programs of that name, that chain with the name itself (``groups``;
    programs with children first). One pass over the tree's rows, never over blocks."""
    if not len(programs):
        return {}, {}
    ids = programs["id"].to_numpy(dtype="int64")
    parents = programs["parent"].to_numpy(dtype="int64", na_value=-1)
    names = [str(n) for n in programs["name"]]
    row_of = {int(i): k for k, i in enumerate(ids)}
    has_children = np.zeros(len(ids), dtype=bool)
    known = np.array([p in row_of for p in parents.tolist()])
    has_children[[row_of[int(p)] for p in parents[known]]] = True
    chain: list[Chain | None] = [None] * len(ids)
    for k in np.argsort(programs["depth"].to_numpy(dtype="int64"), kind="stable").tolist():
        p = row_of.get(int(parents[k]))
        outer = () if p is None else chain[p] or ()
        # a program named as the one enclosing it (an op's group and the op's Call step) is one level
        chain[k] = outer if p is None or outer[-1:] == (names[p],) else (*outer, names[p])
    above: dict[str, list[Chain]] = {}
    with_children: dict[str, list[Chain]] = {}
    leaves: dict[str, list[Chain]] = {}
    for k, name in enumerate(names):
        here = chain[k] or ()
        above.setdefault(name, []).append(here)
        if name in here:
            continue  # inside a program of the same name: the outer one is the group
        (with_children if has_children[k] else leaves).setdefault(name, []).append((*here, name))
    groups = {name: with_children.get(name) or leaves[name] for name in {*with_children, *leaves}}
    return ({n: list(dict.fromkeys(c)) for n, c in above.items()},
            {n: list(dict.fromkeys(c)) for n, c in groups.items()})


def _shared(a: Chain, b: Chain) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def flame_spans(trace: pd.DataFrame, programs: pd.DataFrame, ipu: int, *,
                max_depth: int = MAX_FLAME_DEPTH) -> pd.DataFrame:
    """The flame spans of IPU ``ipu``'s blocks (see the module docstring for how blocks are linked
    to programs): one row per execution of an enclosing program, ``depth`` (int64, 0 = outermost,
    below ``max_depth``), ``cycles_from`` / ``cycles_to`` (int64 cycles: its first block's start,
    its last block's end), ``name`` (the program's name) and ``blocks`` (int64, how many blocks it
    encloses), sorted by depth then start. Empty when no block has an enclosing program."""
    keep = np.flatnonzero((trace["ipu"].to_numpy() == ipu) & (trace["type"] != WAITING_TYPE).to_numpy())
    if not len(keep) or max_depth < 1:
        return _empty()
    keep = keep[np.argsort(trace["cycles_from"].to_numpy(dtype="int64")[keep], kind="stable")]
    a = trace["cycles_from"].to_numpy(dtype="int64")[keep]
    z = trace["cycles_to"].to_numpy(dtype="int64")[keep]
    parent = trace["parent"].to_numpy(dtype=object)[keep]
    # the key a block is placed by: its group's name, else its own program's name (codes: the
    # groups first, then the programs)
    parent_codes, parent_names = pd.factorize(parent)
    program_codes, program_names = pd.factorize(trace["program"].to_numpy(dtype=object)[keep])
    codes = np.where(parent != "", parent_codes, len(parent_names) + program_codes)
    above, groups = _tree_places(programs)
    keys = [(True, str(n)) for n in parent_names] + [(False, str(n)) for n in program_names]
    # every distinct chain of enclosing names gets an id; each key its candidate chains' ids
    chain_ids: dict[Chain, int] = {}
    candidates: list[list[int]] = []
    for is_group, name in keys:
        places = (groups.get(name) or [(name,)]) if is_group else (above.get(name) or [()])
        candidates.append([chain_ids.setdefault(c, len(chain_ids)) for c in places])
    # runs of consecutive blocks of one key take its first place; only runs of a name with several
    # places are resolved one by one, by the run before them
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    run_code = codes[starts]
    run_chain = np.array([c[0] for c in candidates], dtype="int64")[run_code]
    chains = list(chain_ids)
    several = np.array([len(c) > 1 for c in candidates], dtype=bool)
    for r in np.flatnonzero(several[run_code]).tolist():
        before = chains[run_chain[r - 1]] if r else ()
        run_chain[r] = max(candidates[run_code[r]], key=lambda c: _shared(chains[c], before))
    # every distinct prefix (level d of a chain with everything above it) gets one code
    prefix_code = np.full((len(chains), max_depth), -1, dtype="int64")
    prefix_ids: dict[Hashable, int] = {}
    prefix_names: list[str] = []
    for i, chain in enumerate(chains):
        for d in range(min(len(chain), max_depth)):
            prefix = chain[: d + 1]
            if prefix not in prefix_ids:
                prefix_ids[prefix] = len(prefix_names)
                prefix_names.append(chain[d])
            prefix_code[i, d] = prefix_ids[prefix]
    run_of_block = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(keep)]))
    level = prefix_code[run_chain[run_of_block]]  # (blocks, max_depth)
    names_of = np.asarray(prefix_names, dtype=object)
    frames = []
    for d in range(max_depth):
        c = level[:, d]
        held = np.flatnonzero(c >= 0)
        if not len(held):
            break
        # a span ends where the program at this level changes or a block outside it runs
        new = np.r_[True, (c[held][1:] != c[held][:-1]) | (np.diff(held) > 1)]
        first = np.flatnonzero(new)
        frames.append(pd.DataFrame({
            "depth": np.full(len(first), d, dtype="int64"),
            "cycles_from": np.minimum.reduceat(a[held], first),
            "cycles_to": np.maximum.reduceat(z[held], first),
            "name": names_of[c[held][first]],
            "blocks": np.diff(np.r_[first, len(held)]).astype("int64"),
        }))
    if not frames:
        return _empty()
    return pd.concat(frames, ignore_index=True).astype({"name": object})


def bin_small_spans(spans: pd.DataFrame, min_cycles: int, origin: int = 0) -> pd.DataFrame:
    """``spans`` (as :func:`flame_spans`) with the spans shorter than ``min_cycles`` merged per
    depth and time bin of ``min_cycles`` from ``origin`` (by their start): one span from the first
    start to the last end of the bin's short spans, named after the one it holds or
    "N groups under M cycles", ``blocks`` summed. Longer spans are kept as they are; the result is
    sorted by depth then start. ``min_cycles`` < 2 returns ``spans`` unchanged."""
    if min_cycles < 2 or not len(spans):
        return spans
    length = (spans["cycles_to"] - spans["cycles_from"]).to_numpy()
    short = spans[length < min_cycles]
    if not len(short):
        return spans
    a = short["cycles_from"].to_numpy(dtype="int64")
    depth = short["depth"].to_numpy(dtype="int64")
    bins = (a - origin) // min_cycles
    by_bin = np.lexsort((a, bins, depth))
    depth, bins, a = depth[by_bin], bins[by_bin], a[by_bin]
    first = np.flatnonzero(np.r_[True, (depth[1:] != depth[:-1]) | (bins[1:] != bins[:-1])])
    count = np.diff(np.r_[first, len(by_bin)])
    names = short["name"].to_numpy(dtype=object)[by_bin][first]
    merged_name = f"groups under {min_cycles:,} cycles"
    merged = pd.DataFrame({
        "depth": depth[first],
        "cycles_from": a[first],
        "cycles_to": np.maximum.reduceat(short["cycles_to"].to_numpy(dtype="int64")[by_bin], first),
        "name": [f"{n:,} {merged_name}" if n > 1 else name for n, name in zip(count.tolist(), names.tolist())],
        "blocks": np.add.reduceat(short["blocks"].to_numpy(dtype="int64")[by_bin], first),
    })
    out = pd.concat([spans[length >= min_cycles], merged], ignore_index=True)
    out = out.astype({c: object if c == "name" else "int64" for c in FLAME_COLUMNS})
    return out.sort_values(["depth", "cycles_from"], kind="stable").reset_index(drop=True)


def flame_depth(spans: pd.DataFrame) -> int:
    """Rows the spans need (their deepest depth + 1; 0 without spans)."""
    return int(spans["depth"].max()) + 1 if len(spans) else 0


__all__ = ["FLAME_COLUMNS", "MAX_FLAME_DEPTH", "bin_small_spans", "flame_depth", "flame_spans"]
