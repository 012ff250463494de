from __future__ import annotations

import pytest
from compare_builders import liveness, report, tiles

from profcompare.comparison import Limit, check_limits, compare, parse_limit
from profcompare.errors import ProfcompareError


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("peak_liveness_bytes>5%", Limit("peak_liveness_bytes", 5.0)),
        ("cycles_per_step>2%", Limit("cycles_per_step", 2.0)),
        (" total_bytes > 0.5 % ", Limit("total_bytes", 0.5)),
        ("code_bytes>10", Limit("code_bytes", 10.0)),
    ],
)
def test_parse_limit(text: str, limit: Limit) -> None:
    assert parse_limit(text) == limit


def test_limit_text_round_trips() -> None:
    assert str(parse_limit("peak_liveness_bytes>5%")) == "peak_liveness_bytes>5%"


@pytest.mark.parametrize("text", ["", "peak_liveness_bytes", "peak_liveness_bytes=5%", "peak_liveness_bytes>five%", ">5%",
                                  "samples_per_second<>5%"])
def test_parse_limit_rejects_bad_syntax(text: str) -> None:
    with pytest.raises(ProfcompareError, match=r"expected METRIC>PCT% \(a growth\) or METRIC<PCT% \(a drop\)"):
        parse_limit(text)


def test_parse_limit_rejects_unknown_metric() -> None:
    with pytest.raises(ProfcompareError, match="unknown metric 'peak_bytes'.*peak_liveness_bytes"):
        parse_limit("peak_bytes>5%")


def test_check_limits_reports_only_violations() -> None:
    base = report(tiles=tiles([1000, 1000]), liveness=liveness(["a"], [1000]))
    new = report("new", tiles=tiles([1100, 1000]), liveness=liveness(["a"], [1000]))
    diff = compare(base, new)
    # peak liveness: 1000 + 1000 -> 1050 + 1000 = +2.5%; total bytes: 2000 -> 2100 = +5%
    assert check_limits(diff, [parse_limit("peak_liveness_bytes>5%")]) == []
    messages = check_limits(diff, [parse_limit("peak_liveness_bytes>2%"), parse_limit("total_bytes>5%")])
    assert messages == [
        "peak_liveness_bytes>2%: peak_liveness_bytes worse by 2.50% (grew 2,000 bytes -> 2,050 bytes), above the +2% limit"
    ]


def test_check_limits_growth_from_zero_and_unavailable_metrics() -> None:
    base = report(tiles=tiles([500]))
    new = report("new", tiles=tiles([1500]))
    diff = compare(base, new)
    assert check_limits(diff, [parse_limit("tiles_over_budget>0%")]) == [
        "tiles_over_budget>0%: tiles_over_budget worse: grew from 0 to 1 tiles"
    ]
    assert check_limits(diff, [parse_limit("cycles_per_step>2%")]) == [
        "cycles_per_step>2%: cannot check, cycles_per_step is not available in base and new"
    ]
    assert check_limits(compare(base, base), [parse_limit("code_bytes>1%")]) == []


@pytest.mark.parametrize(("text", "limit"), [("samples_per_second<-5%", Limit("samples_per_second", -5.0, "<")),
                                              ("code_bytes < 0", Limit("code_bytes", 0.0, "<"))])
def test_parse_drop_limits(text: str, limit: Limit) -> None:
    assert parse_limit(text) == limit
    assert str(limit) == text.replace(" ", "").rstrip("%") + "%"


def _metric_pair(metric: str, base_value: float, new_value: float):  # type: ignore[no-untyped-def]
    """A comparison whose summary has ``metric`` = base_value -> new_value."""
    import pandas as pd

    from profcompare.model import METRIC_UNITS

    class _Diff:
        summary = pd.DataFrame(
            {"base": [base_value], "new": [new_value],
             "delta_pct": [100.0 * (new_value - base_value) / base_value], "unit": [METRIC_UNITS[metric]]},
            index=[metric],
        )

    return _Diff()


@pytest.mark.parametrize("metric", list(__import__("profcompare.model", fromlist=["METRICS"]).METRICS))
def test_both_directions_on_every_metric(metric: str) -> None:
    from profcompare.model import HIGHER_IS_BETTER

    up, down = _metric_pair(metric, 1000.0, 1100.0), _metric_pair(metric, 1000.0, 900.0)
    grow_limit, drop_limit = parse_limit(f"{metric}>5%"), parse_limit(f"{metric}<-5%")
    higher_better = metric in HIGHER_IS_BETTER
    # +10% breaks the growth limit, -10% the drop limit; neither breaks the other
    (grew,) = check_limits(up, [grow_limit])
    (dropped,) = check_limits(down, [drop_limit])
    assert check_limits(up, [drop_limit]) == [] and check_limits(down, [grow_limit]) == []
    assert f"{metric} {'better' if higher_better else 'worse'} by 10.00% (grew" in grew
    assert f"{metric} {'worse' if higher_better else 'better'} by 10.00% (dropped" in dropped
    assert check_limits(_metric_pair(metric, 1000.0, 1040.0), [grow_limit]) == []
    assert check_limits(_metric_pair(metric, 1000.0, 960.0), [drop_limit]) == []


def test_throughput_drop_message() -> None:
    (message,) = check_limits(_metric_pair("samples_per_second", 40_000.0, 36_000.0), [parse_limit("samples_per_second<-5%")])
    assert message == ("samples_per_second<-5%: samples_per_second worse by 10.00% "
                       "(dropped 40,000 samples/s -> 36,000 samples/s), below the -5% limit")


# --fail-if messages, pinned: what changed (size, grew or dropped, worse or better) and the signed
# limit it is above or below; a change within the limit says nothing. Worked out by hand:
# 40,000 -> 39,912 is -88 / 40,000 = -0.22%; 2,000,000 -> 2,004,400 is +0.22%;
# 2,000,000 -> 2,110,000 is +5.50%; 40,000 -> 37,000 is -7.50%.
@pytest.mark.parametrize(
    ("metric", "base_value", "new_value", "limit", "expected"),
    [
        ("peak_liveness_bytes", 2_000_000.0, 2_004_400.0, "peak_liveness_bytes>5%", []),
        ("peak_liveness_bytes", 2_000_000.0, 2_110_000.0, "peak_liveness_bytes>5%",
         ["peak_liveness_bytes>5%: peak_liveness_bytes worse by 5.50% (grew 2,000,000 bytes -> 2,110,000 bytes), "
          "above the +5% limit"]),
        ("samples_per_second", 40_000.0, 39_912.0, "samples_per_second<-5%", []),
        ("samples_per_second", 40_000.0, 37_000.0, "samples_per_second<-5%",
         ["samples_per_second<-5%: samples_per_second worse by 7.50% (dropped 40,000 samples/s -> 37,000 samples/s), "
          "below the -5% limit"]),
        ("samples_per_second", 40_000.0, 39_912.0, "samples_per_second<5%",
         ["samples_per_second<5%: samples_per_second worse by 0.22% (dropped 40,000 samples/s -> 39,912 samples/s), "
          "below the +5% limit (it asks for a gain of at least 5%; a drop of more than 5% is samples_per_second<-5%)"]),
        ("samples_per_second", 40_000.0, 42_400.0, "samples_per_second<5%", []),
        ("peak_liveness_bytes", 2_000_000.0, 2_004_400.0, "peak_liveness_bytes>-5%",
         ["peak_liveness_bytes>-5%: peak_liveness_bytes worse by 0.22% (grew 2,000,000 bytes -> 2,004,400 bytes), "
          "above the -5% limit (it asks for a drop of at least 5%; a growth of more than 5% is peak_liveness_bytes>5%)"]),
        ("peak_liveness_bytes", 2_000_000.0, 1_890_000.0, "peak_liveness_bytes>-5%", []),
        ("samples_per_second", 40_000.0, 40_000.0, "samples_per_second<5%",
         ["samples_per_second<5%: samples_per_second unchanged (40,000 samples/s), below the +5% limit "
          "(it asks for a gain of at least 5%; a drop of more than 5% is samples_per_second<-5%)"]),
    ],
)
def test_fail_if_messages_state_the_change_and_the_limit(
        metric: str, base_value: float, new_value: float, limit: str, expected: list[str]) -> None:
    assert check_limits(_metric_pair(metric, base_value, new_value), [parse_limit(limit)]) == expected


def test_a_change_of_exactly_the_limit_does_not_fail() -> None:
    # 1,000 -> 1,050 bytes is 5%; 0.3 s -> 0.315 s is 5% too, though float64 computes 5.000000000000004%
    assert check_limits(_metric_pair("peak_liveness_bytes", 1000.0, 1050.0), [parse_limit("peak_liveness_bytes>5%")]) == []
    assert check_limits(_metric_pair("seconds_per_step", 0.3, 0.315), [parse_limit("seconds_per_step>5%")]) == []
    assert check_limits(_metric_pair("samples_per_second", 1000.0, 950.0), [parse_limit("samples_per_second<-5%")]) == []


def test_a_change_just_beyond_the_limit_fails_and_shows_enough_digits() -> None:
    # 1,000,000 -> 1,050,001 is +5.0001%: printed with two decimals it would read as the limit
    (message,) = check_limits(_metric_pair("peak_liveness_bytes", 1_000_000.0, 1_050_001.0),
                              [parse_limit("peak_liveness_bytes>5%")])
    assert message == ("peak_liveness_bytes>5%: peak_liveness_bytes worse by 5.0001% "
                       "(grew 1,000,000 bytes -> 1,050,001 bytes), above the +5% limit")
