"""profcompare.analysis.vertices: the largest vertex types, compute sets and exchanges."""

from __future__ import annotations

import pytest

from profcompare.analysis.vertices import largest, largest_compute_sets, largest_exchanges, largest_vertex_types
from profcompare.errors import ProfcompareError
from profcompare.model import Report, ReportMeta, Target, table_from_rows

META = ReportMeta(source="", format="store", producer="test", simulated=False,
                  target=Target("Mk2", num_ipus=1, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                num_replicas=1, ipus_per_replica=1))
REPORT = Report.build(
    META,
    vertices=table_from_rows("vertices", [
        ("poplin::ConvPartial1x1Out<half,float>", 96, 4608, 6400, 4, 2),
        ("popops::Zero<float>", 400, 6400, 200, 4, 1),
        ("(not attributed to a vertex type)", 0, 0, 9000, None, 0),
    ]),
    compute_sets=table_from_rows("compute_sets", [
        ("fwd/Convolve", 4, "fc1", 0, 1, 96, 4608, 900, 4),
        ("fwd/Zero", 5, "fc1", 0, 1, 400, 6400, None, 4),
    ]),
    exchanges=table_from_rows("exchanges", [
        ("fwd/ExchangePre", 6, "fc1", 0, "DoExchange", 1024, 100, 4),
        ("host/copy", 7, "", 0, "StreamCopyMid", 4096, 20, 4),
    ]),
)


def test_the_largest_by_code_and_by_state() -> None:
    # the remainder row holds more code than any type but is not one
    assert largest_vertex_types(REPORT)["name"].tolist() == ["poplin::ConvPartial1x1Out<half,float>",
                                                             "popops::Zero<float>"]
    assert largest_vertex_types(REPORT, 1, by="vertex_state_bytes")["name"].tolist() == ["popops::Zero<float>"]
    assert largest_compute_sets(REPORT)["name"].tolist() == ["fwd/Zero", "fwd/Convolve"]
    # cycles a compute set does not record sort last
    assert largest_compute_sets(REPORT, by="cycles")["name"].tolist() == ["fwd/Convolve", "fwd/Zero"]
    assert largest_exchanges(REPORT, 1)["name"].tolist() == ["host/copy"]
    assert largest_exchanges(REPORT, by="cycles")["name"].tolist() == ["fwd/ExchangePre", "host/copy"]


def test_an_unknown_table_or_figure_is_refused() -> None:
    with pytest.raises(ProfcompareError, match="no table 'codelets'"):
        largest(REPORT, "codelets", "code_bytes")
    with pytest.raises(ProfcompareError, match="no figure 'name' in vertices"):
        largest(REPORT, "vertices", "name")
