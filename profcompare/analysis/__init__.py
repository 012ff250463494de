"""Analysis: pure functions over a report's tables (no I/O, no plotting, no wording).

- :mod:`~profcompare.analysis.views`: summary breakdowns, top-N views, liveness peak, tile figures
- :mod:`~profcompare.analysis.ledger`: the memory ledger (bytes per parameter, role and location)
- :mod:`~profcompare.analysis.nway`: several reports side by side (a run's variants, a sweep's points)
- :mod:`~profcompare.analysis.replicas`: which replica and replica groups a report's figures are for
- :mod:`~profcompare.analysis.memory_per_ipu`: a replica's memory per IPU
- :mod:`~profcompare.analysis.trace`: the execution trace's spans, totals per type and time bins
- :mod:`~profcompare.analysis.trace_fidelity`: a simulated trace against a measured one
- :mod:`~profcompare.analysis.vertices`: the largest vertex types, compute sets and exchanges
- :mod:`~profcompare.analysis.advise_results`: an advise run's points: fit, Pareto front, the verdict's facts

Built on the model only; the comparison, the render layer and the runner build on it.
"""
