"""One spelling per meaning: every command's options (typer's click objects, plugins' commands and
the importers' options included) walked, and a spelling that means two things, a negated flag
spelled twice, or an old spelling not declared fails (cli/style.py says what each one means)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from recall_kit import registry
from recall_kit.cli import get_app
from recall_kit.cli.curate import importer_flags
from recall_kit.cli.style import OLD_SPELLINGS, TREC_EVAL_SPELLINGS, old_spellings


def _walk() -> dict[str, Any]:
    """Every leaf command's options as --help shows them, and every importer's flags: run in this
    process as `python THIS_FILE` (so every installed plugin loads, as for a user)."""
    commands: dict[str, list[dict[str, Any]]] = {}

    def walk(command: Any, path: str) -> None:
        if hasattr(command, "list_commands"):
            ctx = typer.Context(command)
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), f"{path} {name}".strip())
            return
        ctx = typer.Context(command)
        commands[path] = [
            {"name": param.name, "opts": [*param.opts, *param.secondary_opts], "flag": bool(param.is_flag),
             "shown": _shown(param.get_help_record(ctx))}
            for param in command.params if getattr(param, "param_type_name", "") == "option"]

    walk(typer.main.get_command(get_app()), "")
    importers = {name: [flag for flag, _ in importer_flags(registry.importers.get(name).obj.Options)]
                 for name in registry.importers.names()}
    return {"commands": commands, "importers": importers}


def _shown(record: tuple[str, str] | None) -> list[str]:
    """The spellings in an option's --help record."""
    if record is None:
        return []
    words = record[0].replace(",", " ").replace("/", " ").split()
    return [word for word in words if word.startswith("-")]


@pytest.fixture(scope="module")
def walked() -> dict[str, Any]:
    env = {key: value for key, value in os.environ.items() if key != "RECALL_KIT_LOAD_PLUGINS"}
    done = subprocess.run([sys.executable, __file__], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _meaning(option: dict[str, Any]) -> tuple[str, bool]:
    """What an option means: its first long spelling shown, and whether it takes a value. `--json`
    is one meaning whichever its form (style.py: the numbers as JSON, to PATH or printed)."""
    shown = option["shown"]
    primary = next((spelling for spelling in shown if spelling.startswith("--")), shown[0])
    return (primary, primary == "--json" or not option["flag"])


def test_every_spelling_shown_means_one_thing_in_every_command(walked: dict[str, Any]) -> None:
    commands = walked["commands"]
    assert {"pool", "judge", "label", "eval", "remote probe", "graph-explain", "dataset import"} <= set(commands)
    meanings: dict[str, set[tuple[str, bool]]] = defaultdict(set)
    where: dict[tuple[str, tuple[str, bool]], str] = {}
    for path, options in commands.items():
        for option in options:
            if not option["shown"]:
                continue
            meaning = _meaning(option)
            for spelling in option["shown"]:
                meanings[spelling].add(tuple(meaning))
                where.setdefault((spelling, meaning), path)
    clashes = {spelling: sorted(f"{where[spelling, meaning]}: {meaning[0]}" for meaning in found)
               for spelling, found in meanings.items() if len(found) > 1}
    assert clashes == {}
    assert meanings["-q"] == {("--per-query", False)}
    assert meanings["--out"] == {("--out", True)} and meanings["--output"] == {("--output", True)}


def test_output_is_the_report_and_out_a_data_file(walked: dict[str, Any]) -> None:
    for path, options in walked["commands"].items():
        spellings = {spelling: option for option in options for spelling in option["shown"]}
        if "--output" in spellings:  # the report --report renders, written to a file
            assert "--report" in spellings, path
        for data in ("--out", "--out-dir"):
            if data in spellings:
                assert not spellings[data]["flag"], path


def test_every_hidden_spelling_is_declared_and_every_declared_one_parses(walked: dict[str, Any]) -> None:
    declared_used = set()
    for path, options in walked["commands"].items():
        name = path.split()[-1]
        old = old_spellings(name)
        for option in options:
            for spelling in option["opts"]:
                if spelling in option["shown"]:
                    continue
                assert spelling in old or spelling in TREC_EVAL_SPELLINGS.get(option["name"], ()), (path, spelling)
                if spelling in old:
                    declared_used.add((name, spelling) if spelling in OLD_SPELLINGS.get(name, {}) else ("*", spelling))
    declared = {(name, spelling) for name, table in OLD_SPELLINGS.items() for spelling in table}
    assert declared - declared_used == set()  # no stale entry


def test_no_negated_flag_is_spelled_twice(walked: dict[str, Any]) -> None:
    for path, options in walked["commands"].items():
        spellings = [spelling for option in options for spelling in option["opts"]]
        assert len(spellings) == len(set(spellings)), path
        assert not [spelling for spelling in spellings if spelling.startswith("--no-no-")], path
    assert {"http", "mcp", "sqlite"} <= set(walked["importers"])
    for name, flags in walked["importers"].items():
        assert not [flag for flag in flags if "--no-no-" in flag], name
    assert "--no-sensitive-col" in walked["importers"]["sqlite"]


@pytest.mark.parametrize(("args", "note"), [
    (["pool", "missing.json", "--output", "pool.jsonl"], "recall-kit: pool --output is now --out"),
    (["ablate", "-d", "missing", "-r", "fts5+bm25", "--out=results"], "recall-kit: ablate --out is now --out-dir"),
    (["compare", "a.json", "b.json", "--bootstrap", "100"], "recall-kit: compare --bootstrap is now --resamples"),
    (["gate", "--baseline", "a.json", "--current", "b.json"], "recall-kit: gate --baseline is now --accepted"),
])
def test_an_old_spelling_still_parses_with_a_one_line_note(args: list[str], note: str) -> None:
    result = CliRunner().invoke(get_app(), args)
    notes = [line for line in result.stderr.splitlines() if line.startswith("recall-kit: ")]
    assert len(notes) == 1 and notes[0].startswith(note), result.stderr
    assert "No such option" not in result.stderr


def test_dataset_import_names_every_registered_importer() -> None:
    shown = " ".join(CliRunner().invoke(get_app(), ["dataset", "import", "--help"]).output.split())
    assert f"Importer: {', '.join(registry.importers.names())} (see" in shown


if __name__ == "__main__":
    print(json.dumps(_walk()))
