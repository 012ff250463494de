from __future__ import annotations

import time

import numpy as np
import pandas as pd
from compare_builders import meta

from profcompare.compare import compare
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


def test_compare_is_vectorised_at_scale() -> None:
    base = big_report(100_000, 20_000, seed=0, renamed_every=0)
    new = big_report(100_000, 20_000, seed=1, renamed_every=10)
    started = time.perf_counter()
    diff = compare(base, new)
    elapsed = time.perf_counter() - started
    counts = diff.variables["match"].value_counts()
    assert counts["exact"] == 90_000 and counts["normalised"] == 10_000 and counts["unmatched"] == 0
    assert diff.liveness.attrs["alignment"] == "program"
    assert len(diff.liveness) == 20_001
    # About 0.3 s on a 2-core machine; the bound leaves room for a busy CI runner.
    assert elapsed < 5.0, f"compare took {elapsed:.1f}s for 100k variables"
