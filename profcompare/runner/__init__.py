"""Running workload variants in subprocesses with Poplar's autoReport, into run directories.

``profcompare run`` and ``profcompare sweep`` (and notebooks, through :func:`profcompare.run`)
go through this package, whose modules are the run's stages:

- :mod:`~profcompare.runner.plan`: what to run -- jobs validated against the workload registry
  before anything runs, the backend, engine options, run names;
- :mod:`~profcompare.runner.execute`: how it runs -- one subprocess per job with autoReport into
  the job's directory, child tracking and signals, or an engine's workers;
- :mod:`~profcompare.runner.child`: the process a job runs in -- its environment, its exit, the
  run.json of a job that failed before writing one;
- :mod:`~profcompare.runner.engine`: engines that run many jobs in warm worker processes (a local
  pool, or a Dask cluster: :mod:`~profcompare.runner.dask_engine`; chosen by
  :mod:`~profcompare.runner.engines`), each job as :mod:`~profcompare.runner.in_process` runs it;
- :mod:`~profcompare.runner.process`: the child processes' entry points (a variant, a popxl
  program, a warm worker) and their watch on the parent;
- :mod:`~profcompare.runner.rundir`: where it lands -- run.json, the hidden staging directory
  renamed into place only when complete, clean-up, listing;
- :mod:`~profcompare.runner.staging`: staging directories locked by their owner for their whole
  life, and clean-up of those whose owner is proven gone;
- :mod:`~profcompare.runner.process_group`: a job's subprocess and everything it starts end together;
- :mod:`~profcompare.runner.summarise`: what it means -- comparisons of the base with every
  other variant (:func:`run_variants` ties the stages together);
- :mod:`~profcompare.runner.sweep`: one variant at every point of a grid of knob values;
- :mod:`~profcompare.runner.results`: the records a run produces.

Nothing here prints or renders: progress goes to an optional callback the CLI draws, and pages
are written by the caller's writers (:class:`RunPages`) into the staging directory.
"""

from __future__ import annotations

from profcompare.errors import WorkloadError
from profcompare.runner.results import (
    ComparisonOutcome,
    FINALIZE_LABEL,
    JobOutcome,
    ProgressCallback,
    RunResult,
    STAGES,
    STATUSES,
    replace_result,
)
from profcompare.runner.plan import (
    Job,
    MAX_RUN_NAME_BYTES,
    SCRIPT_CHILD_MODULE,
    check_run_name,
    default_run_name,
    find_knob,
    make_jobs,
    merge_engine_options,
    normalise_knob_name,
    resolve_backend,
    resolve_config,
    script_job,
    script_label,
    workload_ref,
    workload_registry,
)
from profcompare.runner.rundir import (
    REPORT_FILE_NAMES,
    RUN_JSON,
    RUN_LOG,
    RUN_SCHEMA_VERSION,
    RunListing,
    Staging,
    StagingLostError,
    find_report_files,
    job_status,
    leftover_staging,
    list_runs,
    now_iso,
    read_run_json,
    remove_stale_staging,
    unique_run_name,
    write_json_atomic,
)
from profcompare.runner.execute import (
    CHILD_MODULE,
    Finalizer,
    check_execution,
    child_environment,
    execute_jobs,
)
from profcompare.runner.engine import (
    Engine,
    LocalPoolEngine,
)
from profcompare.runner.engines import make_engine
from profcompare.runner.summarise import (
    RunPages,
    compare_outcomes,
    open_staged_report,
    run_execution,
    run_variants,
)

__all__ = [
    "CHILD_MODULE",
    "ComparisonOutcome",
    "Engine",
    "FINALIZE_LABEL",
    "Finalizer",
    "Job",
    "JobOutcome",
    "LocalPoolEngine",
    "MAX_RUN_NAME_BYTES",
    "SCRIPT_CHILD_MODULE",
    "ProgressCallback",
    "RunPages",
    "REPORT_FILE_NAMES",
    "RUN_JSON",
    "RUN_LOG",
    "RUN_SCHEMA_VERSION",
    "RunListing",
    "RunResult",
    "STAGES",
    "Staging",
    "StagingLostError",
    "STATUSES",
    "WorkloadError",
    "check_execution",
    "check_run_name",
    "child_environment",
    "compare_outcomes",
    "default_run_name",
    "execute_jobs",
    "find_knob",
    "find_report_files",
    "job_status",
    "leftover_staging",
    "list_runs",
    "make_engine",
    "make_jobs",
    "merge_engine_options",
    "normalise_knob_name",
    "now_iso",
    "open_staged_report",
    "run_execution",
    "read_run_json",
    "remove_stale_staging",
    "replace_result",
    "resolve_backend",
    "resolve_config",
    "script_job",
    "script_label",
    "run_variants",
    "unique_run_name",
    "workload_ref",
    "workload_registry",
    "write_json_atomic",
]
