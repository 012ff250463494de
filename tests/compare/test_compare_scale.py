"""compare() at scale: every row matched as it should be, with work linear in the rows (counted in
Python function calls, the same on any machine). Its speed is measured by benchmarks/bench_scale.py
(compare of two 1,000,000-variable reports)."""

from __future__ import annotations

import cProfile
import pstats

import numpy as np
import pandas as pd
from compare_builders import meta

from profcompare.comparison import compare
from profcompare.model import Report, make_frame


def big_report(n_variables: int, n_steps: int, seed: int, renamed_every: int) -> Report:
    rng = np.random.default_rng(seed)
    names = np.array([f"layer{i % 50}/w{i}" for i in range(n_variables)], dtype=object)
    if renamed_every:
        names[::renamed_every] = [f"main/{n}__t1" for n in names[::renamed_every]]
    variables = make_frame(
        "variables",
        {
            "name": names,
            "bytes": rng.integers(0, 1_000_000, n_variables),
            "always_live": rng.random(n_variables) < 0.5,
            "kind": np.array(["weight", "gradient"], dtype=object)[rng.integers(0, 2, n_variables)],
            "dtype": np.array(["float16"] * n_variables, dtype=object),
            "shape": np.array(["[8]"] * n_variables, dtype=object),
            "tiles": np.ones(n_variables, dtype=np.int64),
            "first_step": pd.array([None] * n_variables, dtype="Int64"),
            "last_step": pd.array([None] * n_variables, dtype="Int64"),
        },
    )
    programs = np.array([f"layer{(i // 5) % 40}/op{i % 5}" for i in range(n_steps)], dtype=object)
    if seed:
        programs = np.insert(programs, n_steps // 2, "remote_load")[:n_steps]
    liveness = make_frame(
        "liveness",
        {
            "step": np.arange(n_steps),
            "program": programs,
            "program_type": np.array(["OnTileExecute"] * n_steps, dtype=object),
            "not_always_live_bytes": rng.integers(0, 10**9, n_steps),
        },
    )
    return Report.build(meta(f"r{seed}"), variables=variables, liveness=liveness)


def _python_calls(base: Report, new: Report) -> int:
    """The number of Python function calls ``compare(base, new)`` makes."""
    profile = cProfile.Profile()
    profile.runcall(compare, base, new)
    return pstats.Stats(profile).total_calls


def test_compare_is_vectorised_at_scale() -> None:
    base = big_report(100_000, 20_000, seed=0, renamed_every=0)
    new = big_report(100_000, 20_000, seed=1, renamed_every=10)
    diff = compare(base, new)
    counts = diff.variables["match"].value_counts()
    assert counts["exact"] == 90_000 and counts["normalised"] == 10_000 and counts["unmatched"] == 0
    assert diff.liveness.attrs["alignment"] == "program"
    assert len(diff.liveness) == 20_001
    small_calls = _python_calls(big_report(10_000, 2_000, seed=0, renamed_every=0),
                                big_report(10_000, 2_000, seed=1, renamed_every=10))
    calls = _python_calls(base, new)
    # Work linear in the rows, a few Python calls per row at most (pandas' string methods call one
    # per name): ten times the rows cost at most ten times the calls (a pairwise matching would
    # cost a hundred times), and the 90,000 extra rows at most 10 calls each.
    assert calls <= 10 * small_calls, f"{calls:,} calls for 100k variables vs {small_calls:,} for 10k"
    assert calls - small_calls <= 10 * 90_000, f"{(calls - small_calls) / 90_000:.1f} calls per extra variable"
