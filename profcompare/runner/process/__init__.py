"""The runner's child processes: the entry point of a workload variant
(:mod:`~profcompare.runner.process.variant_main`) and of a popxl program under ``profile``
(:mod:`~profcompare.runner.process.script_main`), the warm worker of the local pool
(:mod:`~profcompare.runner.process.pool_worker`), a child's watch on its parent
(:mod:`~profcompare.runner.process.parent_watch`) and the ``sitecustomize`` directory a
program's own Python processes start with (``child_site/``)."""
