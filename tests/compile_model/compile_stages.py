"""The first stages of ``compile_program`` for tests that read its intermediate results."""

from __future__ import annotations

from profcompare.emulator.compile import program_steps
from profcompare.emulator.compile.cycles import CostModel
from profcompare.emulator.compile.liveness import instances
from profcompare.emulator.compile.memory import build_storage
from profcompare.emulator.compile.placement import layout_of
from profcompare.emulator.targets import MK2


def compile_stages(program, device=MK2):  # type: ignore[no-untyped-def]
    """The program steps, storage rows and not-always-live instances of ``program`` on ``device``,
    built as compile_program builds them."""
    layout = layout_of(program, device.tiles_per_ipu)
    costs = CostModel(program, device, layout.compute_tiles)
    steps = program_steps(program, costs)
    storage = build_storage(program, steps, costs, device, layout.total_tiles, layout)
    nal_rows = {t: r for t, r in storage.row_of.items() if storage.storage[r] in ("intermediate", "variable")}
    return steps, storage, instances(program, steps, nal_rows, storage.temp_rows)
