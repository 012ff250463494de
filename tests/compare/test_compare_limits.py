from __future__ import annotations

import pytest
from compare_builders import liveness, report, tiles

from profcompare.compare import Limit, check_limits, compare, parse_limit
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


@pytest.mark.parametrize("text", ["", "peak_liveness_bytes", "peak_liveness_bytes<5%", "peak_liveness_bytes>five%", ">5%"])
def test_parse_limit_rejects_bad_syntax(text: str) -> None:
    with pytest.raises(ProfcompareError, match="expected METRIC>PCT%"):
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
        "peak_liveness_bytes>2%: peak_liveness_bytes grew by 2.50% (2,000 bytes -> 2,050 bytes), over the 2% limit"
    ]


def test_check_limits_growth_from_zero_and_unavailable_metrics() -> None:
    base = report(tiles=tiles([500]))
    new = report("new", tiles=tiles([1500]))
    diff = compare(base, new)
    assert check_limits(diff, [parse_limit("tiles_over_budget>0%")]) == [
        "tiles_over_budget>0%: tiles_over_budget grew from 0 to 1 tiles"
    ]
    assert check_limits(diff, [parse_limit("cycles_per_step>2%")]) == [
        "cycles_per_step>2%: cannot check, cycles_per_step is not available in base and new"
    ]
    assert check_limits(compare(base, base), [parse_limit("code_bytes>1%")]) == []
