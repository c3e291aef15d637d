"""The `recall-kit` command line: parses, looks names up, calls the library, prints.

The commands live by what they do: `run` (eval, ablate, sweep), `decide` (score, compare, gate,
agreement), `curate` (dataset ..., pool, judge), `plugins` (plugins, list, new-plugin); the options
they share are declared once in `options`, the help's conventions in `style`. This module holds the
app, the order its commands are listed in, and the one-line errors and exit statuses."""

from __future__ import annotations

import errno
import signal
import sys
from typing import Annotated, Any, NoReturn

import typer

from recall_kit.cli import curate, decide, label, plugins, run, study
from recall_kit.cli.options import emit_report
from recall_kit.cli.style import ClickStyleGroup
from recall_kit.errors import RecallKitError

__all__ = ["app", "emit_report", "get_app", "main"]


class _Group(ClickStyleGroup):
    """Turns every failure into one line on stderr and an exit status a script can trust.

    0: done, the verdict is good; 1: done, the verdict is bad (a regression, lint problems);
    2: no verdict (bad input, a failing plugin, an unwritable output, or an unexpected error);
    130/143/129: interrupted by Ctrl-C / SIGTERM / SIGHUP; 141: stdout's reader stopped early
    (`| head`). `--debug` shows the traceback instead (still 2).
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # `--debug` is accepted anywhere before a `--`: `recall-kit eval ... --debug` as well as
        # `recall-kit --debug eval ...`.
        end = args.index("--") if "--" in args else len(args)
        if "--debug" in args[1:end]:
            args = ["--debug", *(arg for i, arg in enumerate(args) if not (i < end and arg == "--debug"))]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: Any) -> list[str]:
        """`study` first, where the docs tell a user to start; then the others in their order."""
        names = list(super().list_commands(ctx))
        return sorted(names, key=lambda name: name != "study")

    def invoke(self, ctx: Any) -> Any:
        import recall_kit.errors as errors

        errors.DEBUG = bool(ctx.params.get("debug"))
        from recall_kit.fileio import begin_command

        begin_command()
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise
        except BrokenPipeError:
            # `recall-kit ... | head`: the reader stopped early. Quietly, with the status of a Unix
            # tool killed by SIGPIPE (141), never 1: that says the verdict is bad (lint found problems).
            _quiet_closed_stdout()
            raise typer.Exit(128 + getattr(signal, "SIGPIPE", 13)) from None
        except KeyboardInterrupt as error:
            _interrupted(error)
        except SystemExit:  # a plugin command's own exit status
            raise
        except Exception as error:
            interrupt = _interrupt_behind(error)
            if interrupt is not None:
                _interrupted(interrupt)
            _traceback_if_debug(ctx)
            if isinstance(error, RecallKitError):
                typer.echo(f"Error: {_one_line(error)}", err=True)
            elif isinstance(error, OSError):
                typer.echo(f"Error: {_describe_os_error(error)}", err=True)
            else:  # RecursionError, bugs
                typer.echo(f"Error: unexpected {type(error).__name__}: {_one_line(error)} "
                           "(rerun with --debug for the traceback)", err=True)
            raise typer.Exit(2) from None


def _interrupted(error: KeyboardInterrupt) -> NoReturn:
    """A Ctrl-C (or SIGTERM, SIGHUP) the command did not handle itself: one line on what is on disk, 128 + the signal."""
    signum = error.signum if isinstance(error, Terminated) else signal.SIGINT
    _handled_signals.append(signum)
    typer.echo(f"{_SIGNAL_WORDS.get(signum, 'Interrupted')}: {_what_is_on_disk()}", err=True)
    raise typer.Exit(128 + signum) from None


def _interrupt_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C an error stands for, when one caused it: an extension module built with pybind11
    (scipy.spatial's, onnxruntime's) that a Ctrl-C interrupts while it is imported raises
    `ImportError("initialization failed")` from the KeyboardInterrupt (seen once in a CI-sized run of
    two Ctrl-C 10 ms apart during a study's first steps, as "Error: unexpected ImportError", exit 2)."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def _what_is_on_disk() -> str:
    """After an interrupt, the truth about the files: none half-written; those finished before
    it named; a journal kept as the command went named with what it holds."""
    from recall_kit.fileio import on_disk_so_far

    written, kept = on_disk_so_far()
    text = "outputs not yet finished were not written"
    if kept:
        text += "".join(f"; kept in {path}: {holds}" for path, holds in kept.items())
    else:
        text += " (no partial files are left)"
    if written:
        shown = ", ".join(str(path) for path in written[:3])
        text += f"; written before the interrupt: {shown}" + (f" and {len(written) - 3} more" if len(written) > 3 else "")
    return text + "."


def _quiet_closed_stdout() -> None:
    """Point stdout at /dev/null once its reader is gone, so the flush at exit says nothing."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's runner): nothing to quiet
        pass


def _traceback_if_debug(ctx: Any) -> None:
    """Under --debug the error goes on up with its traceback (`main` prints it and exits 2)."""
    if ctx.params.get("debug"):
        raise


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the process is so that every temporary file is removed on the way out."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__()
        self.signum = signum


_SIGNAL_WORDS: dict[int, str] = {signal.SIGINT: "Interrupted", signal.SIGTERM: "Terminated",
                 **({signal.SIGHUP: "Hung up"} if hasattr(signal, "SIGHUP") else {})}


class _ClosedStdout:
    """Stands for a closed stdout (Python sets sys.stdout to None): any text written is an error,
    so a report that could not be printed never exits 0."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str | bytes) -> int:
        if text:
            import errno

            raise OSError(errno.EBADF, "standard output is closed; the report could not be printed")
        return 0

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated(signum)


def _one_line(error: BaseException) -> str:
    """The error on one line, every secret in it masked (a URL's password, a command line's
    --api-key: a plugin may quote its options), cut at 1,000 characters (a value thousands of digits
    long) at a word, saying how much was left out."""
    from recall_kit.masking import mask_secrets

    text = mask_secrets(" ".join(str(error).split()))
    if len(text) <= 1000:
        return text
    cut = text[:900].rsplit(" ", 1)[0]
    return f"{cut} ... ({len(text) - len(cut):,} more characters)"


#: A full disk, a full quota: the file being written is at fault, not the one read.
_FULL_DISK = {errno.ENOSPC, errno.EDQUOT}


def _describe_os_error(error: OSError) -> str:
    from recall_kit.masking import mask_secrets

    reason = error.strerror or type(error).__name__
    if error.filename2 is not None and error.errno in _FULL_DISK:
        # shutil.copyfile names the source first: a full disk is the file being written's.
        return mask_secrets(f"{error.filename2}: {reason}.")
    if error.filename is not None:
        return mask_secrets(f"{error.filename}: {reason}.")
    return f"{reason} ({type(error).__name__})."


app = typer.Typer(
    cls=_Group,
    help="Decide, with evidence, whether a change to your retrieval is real.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.add_typer(curate.dataset_app, name="dataset")
app.add_typer(study.study_app, name="study")


def _print_version(value: bool) -> None:
    if value:
        import recall_kit  # the facade's own attribute: the version it declares

        typer.echo(f"recall-kit {recall_kit.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks instead of one-line errors (before or after the command).")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Decide, with evidence, whether a change to your retrieval is real."""


# `recall-kit --help` lists the commands in this order.
for _name, _command in (
    ("eval", run.eval_command), ("score", decide.score_command), ("plugins", plugins.plugins_command),
    ("list", plugins.list_command), ("judge", curate.judge_command), ("agreement", decide.agreement_command),
    ("compare", decide.compare_command), ("gate", decide.gate_command), ("ablate", run.ablate_command),
    ("sweep", run.sweep_command), ("pool", curate.pool_command), ("label", label.label_command),
    ("new-plugin", plugins.new_plugin_command),
):
    app.command(_name)(_command)


_commands_registered = False
#: The app's own commands and groups, before any plugin added to them (set by the first `get_app`).
_own: tuple[list[Any], list[Any]] | None = None


def get_app() -> typer.Typer:
    """The app with every plugin's commands added (once)."""
    global _commands_registered, _own
    if not _commands_registered:
        from recall_kit.plugins import add_plugin_commands, load_plugins

        _commands_registered = True
        _own = list(app.registered_commands), list(app.registered_groups)
        load_plugins()
        add_plugin_commands(app)
    return app


def app_with_plugin_commands() -> typer.Typer:
    """A copy of the app with the commands of the plugins registered now: for a test that registers
    a plugin for a while (`recall_kit.testing.invoke_cli`), whatever an earlier `get_app` in the
    same process added."""
    import copy

    from recall_kit.plugins import add_plugin_commands, load_plugins

    commands, groups = _own if _own is not None else (app.registered_commands, app.registered_groups)
    fresh = copy.copy(app)
    fresh.registered_commands, fresh.registered_groups = list(commands), list(groups)
    load_plugins()
    add_plugin_commands(fresh)
    return fresh


#: Signals that arrived while recall-kit was exiting, in order: remembered, not raised, so the
#: cleanup then running (atexit: an embedded server stopped and its folder deleted) is not cut short.
_late_signals: list[int] = []
#: Signals this command was interrupted by and handled (its status is 128 + the first). CPython
#: marks a KeyboardInterrupt "unhandled" once it leaves any exec() or eval() of a string, even one
#: caught later (scipy runs `exec("from numpy import *")` while it imports, so a Ctrl-C during a
#: lazy import is one), and then ends the process by SIGINT (-2) whatever the status: seen in 1 run
#: of 6 with two Ctrl-C 0-80 ms apart during a study's first steps. `_exit_for_late_signal` ends it
#: with the status instead.
_handled_signals: list[int] = []


def _remember_signal(signum: int, frame: Any) -> None:
    _late_signals.append(signum)


def _hold_signals_for_exit() -> None:
    """From here to the end of the process, Ctrl-C, SIGTERM and SIGHUP are remembered, not raised:
    a second Ctrl-C during the exit neither prints a traceback nor kills the process by the signal
    (exit -2); `_exit_for_late_signal` then exits 128 + the signal."""
    for number in _EXIT_SIGNALS:
        if signal.getsignal(number) is not signal.SIG_IGN:  # nohup keeps SIGHUP ignored
            signal.signal(number, _remember_signal)


_EXIT_SIGNALS = (signal.SIGINT, signal.SIGTERM, *((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()))


def _exit_for_late_signal() -> None:
    """Registered with atexit before anything else, so it runs last: when a signal arrived during
    the exit, or the command was interrupted (`_handled_signals`), the process ends 128 + that
    signal (130 for Ctrl-C) once every cleanup has run. Otherwise the signals are ignored from here: Python's own teardown, which follows, puts the
    default handlers back, and a Ctrl-C there (tens of milliseconds after a first) killed the
    process by the signal (exit -2) instead of the status already decided."""
    if not _late_signals:
        for number in _EXIT_SIGNALS:
            if signal.getsignal(number) is _remember_signal:
                signal.signal(number, signal.SIG_IGN)
        if not _late_signals and not _handled_signals:  # one that arrived just now: remembered, handled below
            return
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(128 + (_late_signals or _handled_signals)[0])


#: OpenBLAS's idle threads spin-wait 2**28 cycles (about 0.1 s) after every call they work on, and
#: after numpy's import, before they sleep: on the dense eval of the example about 0.19 s of a 0.88 s
#: run's CPU, half of `import numpy`'s, and a core taken from the model meanwhile. 2**20 cycles (about
#: 0.3 ms) keeps them awake between back-to-back calls; docs/performance.md. A user's own value wins.
BLAS_THREAD_TIMEOUT = "20"


def main() -> None:
    import atexit
    import os

    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", BLAS_THREAD_TIMEOUT)  # read when numpy loads OpenBLAS
    atexit.register(_exit_for_late_signal)
    try:
        try:
            _main()
        finally:
            _hold_signals_for_exit()
    except KeyboardInterrupt:  # a Ctrl-C in the moment between `_main`'s own handling and the hold: 130, not -2
        _handled_signals.append(signal.SIGINT)
        raise SystemExit(130) from None


def _main() -> None:
    import signal

    if sys.stdout is None:  # started with stdout closed: printing must fail (exit 2), not vanish
        sys.stdout = _ClosedStdout()
    # SIGTERM and SIGHUP unwind like Ctrl-C, so the atomic writers remove their temporaries on the way out.
    signal.signal(signal.SIGTERM, _on_sigterm)
    if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:  # nohup keeps it ignored
        signal.signal(signal.SIGHUP, _on_sigterm)
    try:
        try:
            application = get_app()
        except RecallKitError as error:
            if _interrupt_behind(error) is None:  # a plugin's import cut short by a Ctrl-C is the Ctrl-C
                print(f"Error: {error}", file=sys.stderr)
                raise SystemExit(2) from None
            raise KeyboardInterrupt from None
    except KeyboardInterrupt:
        _handled_signals.append(signal.SIGINT)
        print("Interrupted.", file=sys.stderr)
        raise SystemExit(130) from None
    try:
        application()
    except SystemExit:
        raise
    except KeyboardInterrupt:  # a second Ctrl-C after the command had handled the first: 130, not -2
        _handled_signals.append(signal.SIGINT)
        raise SystemExit(130) from None
    except OSError as error:  # outside a command (`--version` with stdout closed)
        print(f"Error: {_describe_os_error(error)}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception:  # --debug let it through: the traceback, but still no verdict (2, never 1)
        import traceback

        traceback.print_exc()
        raise SystemExit(2) from None
