"""Help in click's conventions for every command: argument metavars, option placeholders, old
spellings hidden, --report listing the registered reporters."""

from __future__ import annotations

from typing import Any

import typer
import typer.core

_CLICK_TYPE_NAMES = {int: "INTEGER", float: "FLOAT", str: "TEXT"}


def _click_metavar(param: Any) -> str:
    """click's placeholder for a parameter typer would show as <path>, <int>, <list[str]>."""
    import typing

    descriptor = param.type_descriptor
    if descriptor.is_choice:
        return "[" + "|".join(str(choice) for choice in descriptor.choices or ()) + "]"
    if descriptor.is_path:
        return "PATH"
    annotation = descriptor.annotation
    if descriptor.is_list and typing.get_args(annotation):
        annotation = typing.get_args(annotation)[0]
    return _CLICK_TYPE_NAMES.get(annotation, "TEXT")


class _ClickStyleArgument(typer.core.TyperArgument):
    """An argument shown as click shows it: its metavar alone (OUT, RESULTS...), with "..." when
    it takes several values and in brackets when optional; no type beside it."""

    def display_type_rich(self, ctx: Any = None) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = f"{self.metavar}{'...' if self.nargs != 1 else ''}"
        return name if self.required else f"[{name}]"


def _click_style(command: Any) -> Any:
    """Help in click's conventions, the same in every command: an argument is its metavar alone
    (OUT, RESULTS...), an option's value a placeholder (PATH, TEXT, INTEGER, NAME, LIST), and
    --report lists the registered reporters. Plain values are coerced without pydantic (`coercion`)."""
    if hasattr(command, "parse_args") and not hasattr(command, "_coerces_plainly"):
        command._coerces_plainly = True
        command.parse_args = _coercing_plainly(command, command.parse_args)
    for param in getattr(command, "params", []):
        if not hasattr(param, "type_descriptor"):
            continue
        if isinstance(param, typer.core.TyperArgument):
            param.metavar = param.metavar or param.name.upper()
            param.__class__ = _ClickStyleArgument
        elif not getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = _click_metavar(param)
        old = _OLD_SPELLINGS | _OLD_SPELLINGS_OF.get(param.name, frozenset())
        if any(opt in old for opt in getattr(param, "opts", ())) and not hasattr(param, "_hides_old"):
            param._hides_old = True
            param.get_help_record = _hiding_old_spellings(param, param.get_help_record, old)
        if param.name == "report" and param.help and not hasattr(param, "_lists_reporters"):
            param._lists_reporters = True
            param.get_help_record = _listing_reporters(param, param.get_help_record, command.name)
    return command


def _coercing_plainly(command: Any, parse_args: Any) -> Any:
    """`parse_args` that first gives the command's parameters (its --help too) `fast_coercion`."""

    def parse_plainly(ctx: Any, args: list[str]) -> list[str]:
        _coerce_plainly(command.get_params(ctx))
        return parse_args(ctx, args)

    return parse_plainly


def _coerce_plainly(params: list[Any]) -> None:
    """`fast_coercion` for each parameter; nothing where typer's internals it builds on have moved
    (a newer typer): its own coercion then stays."""
    try:
        from recall_kit.cli.coercion import fast_coercion
    except ImportError:
        return
    for param in params:
        fast_coercion(param)


#: Spellings kept working for scripts, but not shown in --help: one spelling per idea is documented
#: (--output for a file a command writes, --out-dir for a folder of files, --resamples for the
#: bootstrap's and randomisation test's resamples).
_OLD_SPELLINGS = frozenset({"--out", "--bootstrap", "--samples"})
#: Old spellings of one option only, by its parameter name: `-c` is --config everywhere, and
#: score's --complete (trec_eval's -c) keeps it only as a hidden alias.
_OLD_SPELLINGS_OF = {"complete": frozenset({"-c"})}


def _hiding_old_spellings(param: Any, get_help_record: Any, old: frozenset[str]) -> Any:
    """`get_help_record` that leaves out an option's old spellings (they still parse)."""

    def without_old(ctx: Any) -> Any:
        opts = param.opts
        param.opts = [opt for opt in opts if opt not in old] or opts
        try:
            return get_help_record(ctx)
        finally:
            param.opts = opts

    return without_old


def _listing_reporters(param: Any, get_help_record: Any, command: str | None) -> Any:
    """`get_help_record` that first appends the reporters that render `command`'s report to
    --report's help: done when that help is shown, not when `recall-kit --help` lists the
    commands (it would load the reporters for nothing)."""

    def with_reporters(ctx: Any) -> Any:
        if "Available:" not in param.help:
            from recall_kit.cli.completion import reporters_for

            param.help = f"{param.help} Available: {', '.join(reporters_for(command))}."
        return get_help_record(ctx)

    return with_reporters


class ClickStyleGroup(typer.core.TyperGroup):
    """A group whose commands' help follows click's conventions (see `_click_style`)."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return _click_style(super().get_command(ctx, cmd_name))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _coerce_plainly(self.get_params(ctx))
        return super().parse_args(ctx, args)
