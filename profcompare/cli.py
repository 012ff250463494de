"""The ``profcompare`` command line: a thin click layer over the public API.

Each subcommand lives in its own module under :mod:`profcompare.commands` and exposes a
``command`` (a click command). This module only assembles them and is the one place where
errors become exit codes: a :class:`~profcompare.errors.ProfcompareError` prints one line
(``profcompare: error: ...``) and exits with its ``exit_code``; ``--debug`` re-raises it so the
traceback is shown. Any other exception is a bug in profcompare: it too prints one line (naming
the exception and ``--debug``) and exits with :data:`INTERNAL_ERROR`, and ``--debug`` shows it.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import importlib
import os
import sys
import warnings
from typing import Any

import click

from profcompare.perf import blas_threads, collector
from profcompare._version import __version__
from profcompare.errors import ProfcompareError

#: subcommand modules, in the order ``--help`` lists them
COMMAND_MODULES = (
    "run",
    "sweep",
    "advise",
    "profile",
    "compare",
    "show",
    "variables",
    "ops",
    "tiles",
    "export",
    "workloads",
    "runs",
)


#: exit code of an unexpected exception (a bug), apart from 1 (a ``--fail-if`` limit exceeded)
#: and 2 (bad input); the value of BSD's EX_SOFTWARE
INTERNAL_ERROR = 70
_DEFAULT_SHOWWARNING = warnings.showwarning
#: Exit code of errors the user can fix (bad input, a path the system refuses), as click's usage errors.
USAGE_ERROR = 2


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMAND_MODULES]


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="profcompare")
@click.option("--debug", is_flag=True, help="Show full tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Build, run and compare IPU memory and cycle profiles of popxl workloads."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


for _name in COMMAND_MODULES:
    cli.add_command(importlib.import_module(f"profcompare.commands.{_name}").command)


def _click_message(exc: click.ClickException) -> str:
    """One line for a click error (bad option, missing file), naming the help to read."""
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        message += f" (see '{ctx.command_path} --help')"
    return message


def _error(message: str) -> None:
    """Print ``message`` as the one error line: folded, control characters made visible."""
    from profcompare.render.control_chars import one_line

    try:
        click.echo(f"profcompare: error: {one_line(message)}", err=True)
    except OSError:
        pass  # stderr itself is gone: the exit code still tells


def _traceback(exc: BaseException) -> None:
    """Print ``exc``'s traceback on stderr (``--debug``); the caller still returns the exit code."""
    import traceback

    with contextlib.suppress(OSError):
        click.echo("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip("\n"), err=True)


def _interrupted(exc: BaseException | None) -> int:
    """One line and the exit code a shell expects: 130 for Ctrl-C, 128 + N for signal N (SIGTERM: 143)."""
    from profcompare.errors import Terminated

    if isinstance(exc, Terminated):
        _error(f"terminated by signal {exc.signum}")
        return 128 + exc.signum
    _error("interrupted")
    return 130


def _os_message(exc: OSError) -> str:
    what = exc.strerror or str(exc) or type(exc).__name__
    # Python would try to flush stdout again at exit and print a warning: the exit code is enough
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    if exc.filename is not None:
        return f"{exc.filename}: {what}"
    if exc.errno in (errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EBADF):
        return f"cannot write output: {what}"
    return what


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``profcompare`` console script. Returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    from profcompare.errors import ProfcompareWarning

    if argv is None:  # the process's own command line: nothing of the process outlives the command
        collector.skip_exit_collection()
    thresholds = gc.get_threshold()
    gc.set_threshold(*collector.COMMAND_GC_THRESHOLDS)
    try:
        # before numpy is imported: the BLAS library every forked variant inherits is loaded here
        with blas_threads.loaded_as_variants_run(), warnings.catch_warnings():
            warnings.showwarning = _show_warning
            # every time, not once per code location: each command's warnings are about its input
            warnings.simplefilter("always", ProfcompareWarning)
            return _main(args, debug)
    finally:
        gc.set_threshold(*thresholds)  # a caller's process (tests, a notebook) keeps its own


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """Warnings meant for users (ProfcompareWarning) as one line; others as Python shows them."""
    from profcompare.errors import ProfcompareWarning
    from profcompare.render.control_chars import one_line

    if issubclass(category, ProfcompareWarning):
        with contextlib.suppress(OSError):
            click.echo(f"profcompare: warning: {one_line(str(message))}", err=True)
        return
    _DEFAULT_SHOWWARNING(message, category, filename, lineno, file, line)


def _main(args: list[str], debug: bool) -> int:
    try:
        # without standalone mode click returns (not raises) the code of ``ctx.exit(n)``
        result = cli.main(args=args, prog_name="profcompare", standalone_mode=False)
    except click.exceptions.Abort as exc:
        # click turns KeyboardInterrupt (and our Terminated) into Abort; the cause says which
        return _interrupted(exc.__cause__ or exc.__context__)
    except click.ClickException as exc:
        no_args_help = getattr(click.exceptions, "NoArgsIsHelpError", None)
        if no_args_help is not None and isinstance(exc, no_args_help):
            exc.show()  # bare `profcompare` prints the help
            return exc.exit_code
        _error(_click_message(exc))
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except ProfcompareError as exc:
        if debug:
            _traceback(exc)
        _error(str(exc))
        return exc.exit_code
    except OSError as exc:
        # the file system said no (a path too long, an unwritable --out, a full disk or stdout)
        if debug:
            _traceback(exc)
        _error(_os_message(exc))
        return USAGE_ERROR
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except Exception as exc:  # the last line of defence: one line, never a traceback
        if debug:
            _traceback(exc)
        detail = str(exc) or "no message"
        _error(f"internal error ({type(exc).__name__}: {detail}); run again with --debug for the traceback")
        return INTERNAL_ERROR
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
