"""``compare_at``: liveness at any step of two reports, aligned by program, worked by hand.

Base runs load, fwd, bwd, update (steps 0-3); new adds a remote_load before bwd (steps 0-4).
Variables (bytes, live steps):

======================  ===============  ================  ================
variable                parameter/role   base              new
======================  ===============  ================  ================
w                       fc1.weight/weight 400 always-live   400 always-live
act                     -/activation     100, 1-1          100, 1-3 (lives longer)
grad                    fc1.weight/grad  200, 2-3          256, 3-4 (grew)
opt/staging             fc1.weight/rs    --                300, 2-4 (added)
======================  ===============  ================  ================

Not-always-live bytes per step: base 0, 100, 200, 200; new 0, 100, 400, 656, 556.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest
from compare_builders import liveness, report, tiles, variables

from profcompare.analysis.at_step import (
    StepChoice,
    StepSelectorError,
    curve_of,
    live_at,
    parse_selector,
    per_ipu_at,
    resolve_step,
    top_peaks,
)
from profcompare.comparison import compare
from profcompare.comparison.at_step import compare_at, join_per_ipu
from profcompare.errors import ProfcompareError
from profcompare.render.sections.at_step import at_step_headline


def _report(variant: str, rows: list[tuple[str, int, bool, str, str, int | None, int | None]],
            programs: list[str], nal: list[int], always: list[int]) -> object:
    return report(
        variant,
        variables=variables(
            [(r[0], r[1], r[2]) for r in rows],
            parameter=[r[3] for r in rows],
            role=[r[4] for r in rows],
            first_step=[r[5] for r in rows],
            last_step=[r[6] for r in rows],
        ),
        liveness=liveness(programs, nal),
        tiles=tiles([a + 100 for a in always], always),
    )


BASE = _report(
    "base",
    [("w", 400, True, "fc1.weight", "weight", None, None),
     ("act", 100, False, "", "activation", 1, 1),
     ("grad", 200, False, "fc1.weight", "gradient", 2, 3)],
    ["load", "fwd", "bwd", "update"], [0, 100, 200, 200], [300, 200],
)
NEW = _report(
    "new",
    [("w", 400, True, "fc1.weight", "weight", None, None),
     ("act", 100, False, "", "activation", 1, 3),
     ("grad", 256, False, "fc1.weight", "gradient", 3, 4),
     ("opt/staging", 300, False, "fc1.weight", "remote_staging", 2, 4)],
    ["load", "fwd", "remote_load", "bwd", "update"], [0, 100, 400, 656, 556], [250, 150],
)


@pytest.fixture(scope="module")
def cmp():  # type: ignore[no-untyped-def]
    return compare(BASE, NEW)


def test_live_at_lists_the_not_always_live_variables_covering_the_step() -> None:
    live = live_at(NEW, 3)  # type: ignore[arg-type]
    assert live["name"].tolist() == ["opt/staging", "grad", "act"]  # largest first
    assert live["bytes"].tolist() == [300, 256, 100]
    assert live["parameter"].tolist() == ["fc1.weight", "fc1.weight", ""]
    assert live["role"].tolist() == ["remote_staging", "gradient", "activation"]
    assert set(live["location"]) == {"not_always_live"}
    assert live["first_step"].tolist() == [2, 3, 1] and live["last_step"].tolist() == [4, 4, 3]
    assert live_at(BASE, 0).empty  # type: ignore[arg-type]


@pytest.mark.parametrize(("selector", "expected"), [
    ("peak", StepChoice(3, "bwd", "OnTileExecute", "peak", 656)),
    ("PEAK", StepChoice(3, "bwd", "OnTileExecute", "peak", 656)),
    ("2", StepChoice(2, "remote_load", "OnTileExecute", "step", 400)),
    ("^upd", StepChoice(4, "update", "OnTileExecute", "match", 556)),
    ("d$", StepChoice(0, "load", "OnTileExecute", "match", 0)),  # the first matching step
])
def test_resolve_step(selector: str, expected: StepChoice) -> None:
    assert resolve_step(NEW, selector) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("selector", "message"), [
    ("9", "no step 9 in new (its steps are 0-4)"),
    ("nothing", "no program of new matches --at 'nothing'"),
    ("(", "--at '(' is not a valid regular expression: missing ), unterminated subpattern at position 0"),
    (" ", "--at needs peak, a step number or a regular expression for program names"),
])
def test_selectors_that_name_no_step_are_refused(selector: str, message: str) -> None:
    with pytest.raises(StepSelectorError, match=re.escape(message)) as caught:
        resolve_step(NEW, selector)  # type: ignore[arg-type]
    assert isinstance(caught.value, ProfcompareError)


def test_top_peaks_are_local_maxima_a_plateau_counted_once() -> None:
    curve = report(liveness=liveness([f"p{i}" for i in range(9)], [1, 5, 5, 2, 7, 3, 3, 9, 9]))
    expected = pd.DataFrame({"rank": np.array([1, 2, 3], dtype=np.int64), "step": np.array([7, 4, 1], dtype=np.int64),
                             "program": pd.Series(["p7", "p4", "p1"], dtype=object),
                             "not_always_live_bytes": np.array([9, 7, 5], dtype=np.int64)})
    pdt.assert_frame_equal(top_peaks(curve), expected)
    assert top_peaks(curve, 2)["step"].tolist() == [7, 4]
    flat = report(liveness=liveness(["a", "b", "c"], [4, 4, 4]))
    assert top_peaks(flat)["step"].tolist() == [0]
    assert top_peaks(report()).empty
    assert top_peaks(BASE)["step"].tolist() == [2]  # type: ignore[arg-type]  # 200 at steps 2-3: one plateau


def test_at_peak_joins_each_reports_own_peak(cmp) -> None:  # type: ignore[no-untyped-def]
    result = compare_at(cmp, "peak")
    assert (result.base.step, result.base.choice.program, result.new.step, result.new.choice.program) == (2, "bwd", 3, "bwd")
    assert (result.base.not_always_live_bytes, result.new.not_always_live_bytes) == (200, 656)
    assert (result.base.listed_bytes, result.new.listed_bytes) == (200, 656)
    assert (result.base.always_live_bytes, result.new.always_live_bytes) == (500, 400)
    assert (result.base.total_bytes, result.new.total_bytes) == (700, 1056)
    expected = pd.DataFrame({
        "parameter": pd.Series(["fc1.weight", "", "fc1.weight"], dtype=object),
        "role": pd.Series(["remote_staging", "activation", "gradient"], dtype=object),
        "base_bytes": np.array([0, 0, 200], dtype=np.int64),
        "new_bytes": np.array([300, 100, 256], dtype=np.int64),
        "delta_bytes": np.array([300, 100, 56], dtype=np.int64),
        "delta_pct": np.array([np.nan, np.nan, 28.0]),
        "status": pd.Categorical(["added", "added", "grew"],
                                 categories=["added", "removed", "grew", "shrank", "unchanged"]),
    })
    pdt.assert_frame_equal(result.by_parameter, expected)
    variables_ = result.variables
    assert variables_["name"].tolist() == ["opt/staging", "act", "grad"]
    assert variables_["base_name"].tolist() == [None, None, "grad"]
    assert variables_["status"].tolist() == ["added", "added", "grew"]
    # act lives longer in new: live at new's bwd (steps 1-3), not at base's (it died at step 1)
    assert variables_["new_first_step"].tolist() == [2, 1, 3] and variables_["new_last_step"].tolist() == [4, 3, 4]
    assert variables_["base_first_step"].isna().tolist() == [True, True, False]
    assert at_step_headline(result) == (
        "At the peak, step 2 (base, bwd) / 3 (new, bwd): not-always-live 200 B -> 656 B (+228.0%); "
        "largest change: fc1.weight remote_staging +300 B")


def test_a_base_step_is_paired_with_the_new_step_aligned_by_program(cmp) -> None:  # type: ignore[no-untyped-def]
    result = compare_at(cmp, "3")  # base's update is new's step 4
    assert (result.base.step, result.base.choice.how, result.new.step, result.new.choice.how) == (3, "step", 4, "aligned")
    assert result.new.choice.program == "update"
    assert result.by_parameter["role"].tolist() == ["remote_staging", "gradient"]
    assert result.by_parameter["delta_bytes"].tolist() == [300, 56]


def test_a_program_only_one_report_runs_pairs_with_the_nearest_earlier_step(cmp) -> None:  # type: ignore[no-untyped-def]
    result = compare_at(cmp, "remote_load")
    assert (result.base.step, result.base.choice.program, result.base.choice.how) == (1, "fwd", "aligned")
    assert (result.new.step, result.new.choice.program, result.new.choice.how) == (2, "remote_load", "match")
    # act is live at both (base 1-1, new 1-3); the staging buffer arrives at remote_load
    assert result.variables["name"].tolist() == ["opt/staging", "act"]
    assert result.variables["status"].tolist() == ["added", "unchanged"]
    assert at_step_headline(result) == (
        "At step 1 (base, fwd) / 2 (new, remote_load): not-always-live 100 B -> 400 B (+300.0%); "
        "largest change: fc1.weight remote_staging +300 B")


@pytest.mark.parametrize(("selector", "message"), [
    ("4", "no step 4 in base (its steps are 0-3)"),
    ("nowhere", "no program of base or new matches --at 'nowhere'"),
])
def test_compare_at_refuses_a_selector_naming_no_step(cmp, selector: str, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StepSelectorError, match=re.escape(message)):
        compare_at(cmp, selector)


def test_parse_selector_kinds() -> None:
    assert parse_selector(" 12 ").step == 12
    assert parse_selector("peak").kind == "peak"
    assert parse_selector("layer[0-9]").kind == "regex"


def test_a_liveness_table_per_ipu_is_summed_per_step_and_split_at_a_step() -> None:
    # liveness with an ipu column (one row per step and IPU): the curve sums the IPUs
    per_ipu = pd.DataFrame({
        "step": np.array([0, 0, 1, 1, 2, 2], dtype=np.int64),
        "ipu": np.array([0, 1, 0, 1, 0, 1], dtype=np.int64),
        "program": pd.Series(["load", "load", "fwd", "fwd", "bwd", "bwd"], dtype=object),
        "program_type": pd.Categorical(["StreamCopy"] * 2 + ["OnTileExecute"] * 4),
        "not_always_live_bytes": np.array([10, 0, 30, 50, 70, 5], dtype=np.int64),
    })
    curve = curve_of(per_ipu)
    assert curve["step"].tolist() == [0, 1, 2] and curve["program"].tolist() == ["load", "fwd", "bwd"]
    assert curve["not_always_live_bytes"].tolist() == [10, 80, 75]
    at_fwd = per_ipu_at(per_ipu, 1)
    assert at_fwd["ipu"].tolist() == [0, 1] and at_fwd["not_always_live_bytes"].tolist() == [30, 50]
    assert per_ipu_at(BASE.liveness, 1).empty  # type: ignore[attr-defined]  # no ipu column: whole replica only
    other = pd.DataFrame({"ipu": np.array([1, 2], dtype=np.int64),
                          "not_always_live_bytes": np.array([20, 9], dtype=np.int64)})
    joined = join_per_ipu(at_fwd, other)
    expected = pd.DataFrame({"ipu": np.array([0, 1, 2], dtype=np.int64),
                             "base_bytes": np.array([30, 50, 0], dtype=np.int64),
                             "new_bytes": np.array([0, 20, 9], dtype=np.int64),
                             "delta_bytes": np.array([-30, -30, 9], dtype=np.int64)})
    pdt.assert_frame_equal(joined, expected)


def test_reports_without_ipu_liveness_have_no_per_ipu_rows(cmp) -> None:  # type: ignore[no-untyped-def]
    assert compare_at(cmp, "peak").per_ipu.empty


@pytest.mark.parametrize("selector", ["peak", "0", "load"])
def test_reports_without_liveness_are_refused(selector: str) -> None:
    bare = compare(report("base", variables=variables([("w", 4)])), report("new", variables=variables([("w", 4)])))
    with pytest.raises(StepSelectorError, match=r"^base records no liveness \(program steps\)$"):
        compare_at(bare, selector)
