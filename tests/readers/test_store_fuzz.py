"""Fuzzing the store reader: any damaged file is refused with a ProfcompareError or reads as a
report that passes validation and renders -- nothing else (bounded to a few seconds here;
benchmarks/fuzz_reports.py runs the long version)."""

from __future__ import annotations

import pathlib
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from readers_builders import build_report
from store_mutations import MUTATIONS, classify

from profcompare.readers import store


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return store.write_report(build_report(), tmp_path_factory.mktemp("pristine") / "profile.sqlite")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=st.sampled_from(MUTATIONS), seed=st.integers(0, 2**32 - 1))
def test_damaged_stores_are_refused_or_valid(pristine: pathlib.Path, tmp_path: pathlib.Path, mutation, seed: int) -> None:
    damaged = tmp_path / f"damaged-{seed}.sqlite"
    mutation(pristine, damaged, random.Random(seed))
    outcome = classify(damaged)
    assert not outcome.startswith("crash"), outcome


@pytest.mark.parametrize("seed", range(12))
def test_resealed_nonsense_is_refused_by_value_validation(pristine: pathlib.Path, tmp_path: pathlib.Path, seed: int) -> None:
    # checksums match, so only the value rules can catch these (all the edits are out of range)
    from store_mutations import resealed_value_edit

    damaged = tmp_path / "forged.sqlite"
    resealed_value_edit(pristine, damaged, random.Random(seed), values=(-1, -(2**40), 2**53 + 7, 2**62))
    with pytest.raises(store.ReportFormatError, match="invalid report content"):
        store.read_report(damaged)
