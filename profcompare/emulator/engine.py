"""Compile model entry point used by the emulator's Session (being written)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from profcompare.emulator.program import LoweredProgram


class Engine:
    """Compiles a LoweredProgram, honours autoReport, tracks runs (interface only for now)."""

    def __init__(self, program: LoweredProgram, device: str = "ipu_model", environ: Mapping[str, str] = os.environ) -> None:
        self.program = program
        self.device = device

    def on_run(self) -> None:
        """Called after every Session.run."""

    def on_detach(self) -> None:
        """Called when the Session detaches (end of ``with session:``)."""
