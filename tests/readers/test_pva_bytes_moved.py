"""The bytes each executed step moves, from pva's ``dataIn`` / ``dataOut`` per IPU."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pandas as pd
from fake_pva import build_report_tree, program

from profcompare.readers.pva import report_from_pva


def _step(type_name: str, *per_ipu: tuple[int, int] | None) -> NS:
    """One execution step of ``type_name`` with, per IPU, (dataIn, dataOut) or None (not recorded)."""
    ipus = []
    for data in per_ipu:
        ipu = NS(cycles=10, activeCycles=NS(cyclesFrom=NS(min=0, max=0), cyclesTo=NS(min=10, max=10)))
        if data is not None:
            ipu.dataIn, ipu.dataOut = data
        ipus.append(ipu)
    return NS(program=program(f"{type_name}/step", type_name), ipus=ipus)


def _bytes_moved(*steps: NS) -> list[object]:
    tree = build_report_tree()
    tree.execution = NS(totalCycles=NS(total=40), runs=[NS(name="run0", steps=list(steps))])
    execution = report_from_pva(tree, source="profile.pop").execution
    return [None if pd.isna(v) else int(v) for v in execution["bytes_moved"]]


def test_a_stream_copy_moves_data_in_plus_data_out_summed_over_its_ipus() -> None:
    # 100 + 28 on the first IPU, 0 + 0 on the second: 128 bytes
    assert _bytes_moved(_step("StreamCopyMid", (100, 28), (0, 0))) == [128]


def test_a_global_exchange_records_zero_and_a_step_without_the_attributes_is_unrecorded() -> None:
    assert _bytes_moved(_step("GlobalExchange", (0, 0)), _step("StreamCopyMid", None, None),
                        _step("OnTileExecute", (0, 0)), _step("DoExchange", (4, 0))) == [0, None, None, 4]


def test_the_default_fake_profile_records_no_bytes() -> None:
    execution = report_from_pva(build_report_tree(), source="profile.pop").execution
    assert str(execution["bytes_moved"].dtype) == "Int64"
    assert execution["bytes_moved"].isna().all()
