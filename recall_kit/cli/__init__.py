"""The `recall-kit` command line: parses, looks names up, calls the library, prints.

The commands live by what they do: `run` (eval, ablate, sweep), `decide` (score, compare, gate,
agreement), `curate` (dataset ..., pool, judge), `plugins` (plugins, list, new-plugin); the options
they share are declared once in `options`, the help's conventions in `style`. This module holds the
app, the order its commands are listed in, and the one-line errors and exit statuses."""

from __future__ import annotations

import signal
import sys
from typing import Annotated, Any

import typer

from recall_kit.cli import curate, decide, label, plugins, run, study
from recall_kit.cli.options import emit_report
from recall_kit.cli.style import _ClickStyleGroup
from recall_kit.errors import RecallKitError

__all__ = ["app", "emit_report", "get_app", "main"]


class _Group(_ClickStyleGroup):
    """Turns every failure into one line on stderr and an exit status a script can trust.

    0: done, the verdict is good; 1: done, the verdict is bad (a regression, lint problems);
    2: no verdict (bad input, a failing plugin, an unwritable output, or an unexpected error);
    130/143/129: interrupted by Ctrl-C / SIGTERM / SIGHUP. `--debug` shows the traceback instead (still 2).
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # `--debug` is accepted anywhere before a `--`: `recall-kit eval ... --debug` as well as
        # `recall-kit --debug eval ...`.
        end = args.index("--") if "--" in args else len(args)
        if "--debug" in args[1:end]:
            args = ["--debug", *(arg for i, arg in enumerate(args) if not (i < end and arg == "--debug"))]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        from recall_kit import errors

        errors.DEBUG = bool(ctx.params.get("debug"))
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise
        except BrokenPipeError:
            raise  # `recall-kit ... | head`: click exits quietly on a closed pipe, as Unix tools do
        except RecallKitError as error:
            _traceback_if_debug(ctx)
            typer.echo(f"Error: {_one_line(error)}", err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt as error:
            signum = error.signum if isinstance(error, Terminated) else signal.SIGINT
            typer.echo(_SIGNAL_WORDS.get(signum, "Interrupted")
                       + ": outputs not yet finished were not written (no partial files are left).", err=True)
            raise typer.Exit(128 + signum) from None
        except OSError as error:
            _traceback_if_debug(ctx)
            typer.echo(f"Error: {_describe_os_error(error)}", err=True)
            raise typer.Exit(2) from None
        except SystemExit:  # a plugin command's own exit status
            raise
        except Exception as error:  # RecursionError, bugs
            _traceback_if_debug(ctx)
            typer.echo(
                f"Error: unexpected {type(error).__name__}: {_one_line(error)} "
                "(rerun with --debug for the traceback)",
                err=True,
            )
            raise typer.Exit(2) from None


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


def _describe_os_error(error: OSError) -> str:
    from recall_kit.masking import mask_secrets

    reason = error.strerror or type(error).__name__
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
        from recall_kit import __version__

        typer.echo(f"recall-kit {__version__}")
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


def get_app() -> typer.Typer:
    """The app with every plugin's commands added (once)."""
    global _commands_registered
    if not _commands_registered:
        from recall_kit.plugins import load_plugins

        _commands_registered = True
        from recall_kit.plugins import add_plugin_commands

        load_plugins()
        add_plugin_commands(app)
    return app


def main() -> None:
    import signal

    if sys.stdout is None:  # started with stdout closed: printing must fail (exit 2), not vanish
        sys.stdout = _ClosedStdout()
    # SIGTERM and SIGHUP unwind like Ctrl-C, so the atomic writers remove their temporaries on the way out.
    signal.signal(signal.SIGTERM, _on_sigterm)
    if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:  # nohup keeps it ignored
        signal.signal(signal.SIGHUP, _on_sigterm)
    try:
        application = get_app()
    except RecallKitError as error:
        print(f"Error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        raise SystemExit(130) from None
    try:
        application()
    except (SystemExit, KeyboardInterrupt):
        raise
    except OSError as error:  # outside a command (`--version` with stdout closed)
        print(f"Error: {_describe_os_error(error)}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception:  # --debug let it through: the traceback, but still no verdict (2, never 1)
        import traceback

        traceback.print_exc()
        raise SystemExit(2) from None
