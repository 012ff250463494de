"""What the runner and both backends (the Poplar SDK, the simulator) agree on: the execution
mode of a run (:mod:`~profcompare.backend.execution_mode`), the ``POPLAR_ENGINE_OPTIONS`` object
(:mod:`~profcompare.backend.poplar_options`) and the popxl-addons API generation
(:mod:`~profcompare.backend.addons_generation`). Light: the command line's start-up may import it."""
