"""Help in click's conventions for every command: argument metavars, option placeholders, old
spellings hidden (and noted when used), --report listing the registered reporters."""

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
    if isinstance(command, typer.core.TyperGroup) and not isinstance(command, ClickStyleGroup):
        command.__class__ = ClickStyleGroup  # a plugin's group (remote): its commands styled too
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
        old = frozenset(old_spellings(command.name)) | TREC_EVAL_SPELLINGS.get(param.name, frozenset())
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
        if not hasattr(command, "list_commands"):  # a group's args are its sub-command's
            _noting_old_spellings(command.name, args)
        return parse_args(ctx, args)

    return parse_plainly


def _coerce_plainly(params: list[Any]) -> None:
    """`fast_coercion` for each parameter (a parameter a typer made otherwise keeps typer's own)."""
    from recall_kit.cli.coercion import fast_coercion

    for param in params:
        fast_coercion(param)


#: One spelling per meaning, in every command (tests/cli/test_option_walk.py walks them all):
#: `--output PATH` the report (what the command prints, as --report renders it) written to a file;
#: `--out PATH` a data file a later command reads (pool's pool, judge's qrels, label's grades);
#: `--json PATH` the command's numbers as a JSON document (printed instead, as a flag, by the
#: listing commands: plugins, list, dataset stats, dataset lint); `--out-dir DIR` a folder of data
#: files; `-q` is --per-query; `-c` is --config.
#:
#: Old spellings, by command name ("*": every command): still parsed for one release, hidden from
#: --help, and a one-line note on stderr names the new spelling when one is used.
OLD_SPELLINGS: dict[str, dict[str, str]] = {
    "*": {"--bootstrap": "--resamples", "--samples": "--resamples"},
    "ablate": {"--out": "--out-dir"},
    "sweep": {"--out": "--out-dir"},
    "generate": {"--out": "--out-dir"},
    "pool": {"--output": "--out"},
    "judge": {"--output": "--out"},
    "probe": {"-q": "--query"},
    "gate": {"--baseline": "--accepted"},  # --baseline names a system everywhere else (study init)
}
#: trec_eval's own short flags a command keeps, hidden, with no note (trec_eval users type them):
#: by parameter name. score's --complete is trec_eval's -c; `-c` shown is --config everywhere.
TREC_EVAL_SPELLINGS = {"complete": frozenset({"-c"})}


def old_spellings(command_name: str | None) -> dict[str, str]:
    """The old spellings `command_name` still parses: old -> the one spelling."""
    return {**OLD_SPELLINGS["*"], **OLD_SPELLINGS.get(command_name or "", {})}


def _noting_old_spellings(command_name: str | None, args: list[str]) -> None:
    """One line on stderr for each old spelling in `args` (before a `--`): the spelling to use."""
    import sys

    old = old_spellings(command_name)
    for arg in args:
        if arg == "--":
            return
        spelling = arg.partition("=")[0] if arg.startswith("--") else arg
        if spelling in old:
            print(f"recall-kit: {command_name} {spelling} is now {old[spelling]} (the old spelling goes in "
                  "the next release).", file=sys.stderr)


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
