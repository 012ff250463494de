"""Performance plumbing of a profcompare process: results computed once per immutable object
(:mod:`~profcompare.perf.memo`), when the cyclic garbage collector runs
(:mod:`~profcompare.perf.collector`) and how many BLAS threads a variant gets
(:mod:`~profcompare.perf.blas_threads`). Standard library only: every layer may use it."""
