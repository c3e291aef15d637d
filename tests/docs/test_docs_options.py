"""Every `recall-kit` command and option named in README.md and docs/ exists: each command line in a
code block, and each inline code span that starts with `recall-kit` or with a command's name
(`` `compare --primary ...` ``), is walked against the click command tree the CLI builds (plugin
commands included), and an option the command does not accept fails here. A doc block skipped by
the doc tests is checked too: this test needs nothing but the text."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^```(\w*)\s*$")
_INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


@dataclass(frozen=True)
class Mention:
    page: str
    line: int
    words: tuple[str, ...]  # from the first word after `recall-kit` to the end of that command


def cli_tree() -> dict:
    """The CLI as data: {"flags": [...], "commands": {name: {...}}} (typer's click tree, every
    installed plugin's commands added), and each importer's options under "importers"."""
    import dataclasses

    import typer

    from recall_kit import registry
    from recall_kit.cli import get_app

    def tree(command) -> dict:
        flags = sorted(flag for parameter in command.params for flag in [*parameter.opts, *parameter.secondary_opts])
        children = getattr(command, "commands", {})
        return {"flags": flags, "commands": {name: tree(child) for name, child in children.items()}}

    importers = {name: sorted(f"--{prefix}{field.name.replace('_', '-')}" for prefix in ("", "no-")
                              for field in dataclasses.fields(registry.importers.get(name).obj.Options))
                 for name in registry.importers.names()}
    return {**tree(typer.main.get_command(get_app())), "importers": importers}


@pytest.fixture(scope="module")
def root() -> dict:
    """`cli_tree()` with every installed plugin loaded (the tests' own process sees the built-ins
    only, RECALL_KIT_LOAD_PLUGINS being empty): computed in a fresh interpreter."""
    env = {key: value for key, value in os.environ.items() if key != "RECALL_KIT_LOAD_PLUGINS"}
    done = subprocess.run([sys.executable, __file__], capture_output=True, text=True, env=env, check=True)
    found = json.loads(done.stdout)
    assert {"eval", "study", "graph-explain"} <= set(found["commands"]) and "mcp" in found["importers"]
    return found


def _words(text: str) -> list[str]:
    text = text.replace("\\\n", " ")
    try:
        return shlex.split(text, comments=False)
    except ValueError:  # an unbalanced quote in prose: split on blanks
        return text.split()


_SEPARATORS = {"|", "||", "&&", ";", "&", "(", "$("}


def _commands_in(text: str, start_words: set[str], anywhere: bool = True) -> list[tuple[str, ...]]:
    """Each run of words after `recall-kit` (or from a leading command name) up to a shell
    separator. `anywhere=False` (a code block's line): only a `recall-kit` that starts the line or
    follows a shell separator, not one a sentence names."""
    found = []
    words = [word.rstrip("`,;:)") if word.endswith(("`", ",", ":")) else word for word in _words(text)]
    starts = [i + 1 for i, word in enumerate(words)
              if word.lstrip("`$(") == "recall-kit" and (anywhere or i == 0 or words[i - 1] in _SEPARATORS)]
    if words and words[0] in start_words:
        starts.insert(0, 0)
    for start in starts:
        end = start
        while end < len(words) and words[end] not in _SEPARATORS | {">", ">>", "2>"} \
                and not words[end].startswith(("#", ">", "|", "<")):
            end += 1
        if end > start:
            found.append(tuple(words[start:end]))
    return found


def mentions(page: Path, start_words: set[str]) -> list[Mention]:
    """The recall-kit command lines of a page: its code blocks' lines and its inline code spans."""
    name = page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else page.name
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Mention] = []
    in_block, language, pending, pending_line = False, "", "", 0
    for number, line in enumerate(lines, start=1):
        fence = _FENCE.match(line.strip())
        if fence or line.strip() == "```":
            in_block, language = (not in_block), (fence.group(1) if fence else "")
            continue
        if in_block:
            if language in {"python", "toml", "json", "yaml", "html"}:
                continue
            text = line[2:] if line.startswith("$ ") else line
            if not pending:
                pending_line = number
            pending += text + "\n"
            if text.rstrip().endswith("\\"):
                continue
            found += [Mention(name, pending_line, words) for words in _commands_in(pending, set(), anywhere=False)]
            pending = ""
            continue
        for span in _INLINE.findall(line):
            found += [Mention(name, number, words) for words in _commands_in(span, start_words)]
    return found


def unknown_options(root: dict, words: tuple[str, ...]) -> list[str]:
    """The options in `words` that the command they name does not accept (empty when all exist),
    or the first word that names no command of a group; `root` is `cli_tree()`."""
    command, path = root, []
    index = 0
    while command["commands"] and index < len(words):
        word = words[index]
        if command is root and word in root["flags"]:  # `recall-kit --debug eval ...`
            index += 1
            continue
        if word.startswith("-"):
            break
        child = command["commands"].get(word)
        if child is None and "/" in word and all(part in command["commands"] for part in word.split("/")):
            child = command["commands"][word.split("/")[0]]  # `dataset import/export`: both exist
        if child is None:
            # A placeholder (`recall-kit COMMAND --help`) or prose after the name; a real word that
            # names no command of the top-level group is reported.
            return [] if not word.islower() or word in {"...", "etc"} else [f"no command {word!r}"]
        command, index = child, index + 1
        path.append(word)
    accepted = {"--help", *root["flags"], *command["flags"]}  # the root's (--debug, --version) go anywhere
    formats = [word for word in words[index:] if not word.startswith("-")]
    if path == ["dataset", "import"] and formats:  # `dataset import FORMAT ... --OPTION`: the importer's
        accepted.update(root["importers"].get(formats[0], []))
    bad = []
    for word in words[index:]:
        option = word.strip("[]()`,.").split("=", 1)[0]
        if option.startswith("-") and len(option) > 1 and not option[1:2].isdigit() and option not in accepted:
            bad.append(option)
    return bad


def test_every_command_and_option_in_the_docs_exists(root):
    start_words = set(root["commands"])
    problems = []
    for page in PAGES:
        for mention in mentions(page, start_words):
            for problem in unknown_options(root, mention.words):
                problems.append(f"{mention.page}:{mention.line}: recall-kit {' '.join(mention.words[:3])}: {problem}")
    assert not problems, "docs name options the commands do not accept:\n" + "\n".join(problems)


@pytest.mark.parametrize("text, bad", [
    ("recall-kit eval -d store -r bm25 --json results/bm25.json", []),
    ("recall-kit eval -d store -r bm25 --no-such-flag x.json", ["--no-such-flag"]),
    ("ls && recall-kit --debug gate a.json b.json --max-drop 0.02 | tee out", []),
    ("recall-kit dataset validate DIR --nope", ["--nope"]),
    ("recall-kit study run study.toml", []),
    ("recall-kit dataset import mcp DIR out --command x --nope", ["--nope"]),
])
def test_an_option_a_command_lacks_is_found(root, tmp_path, text, bad):
    # Not vacuous: an option a command lacks fails, as issue 51's `compare --primary ... --strata`
    # would have; sub-commands of a group are walked and the root's options go anywhere.
    page = tmp_path / "page.md"
    page.write_text(f"```sh\n{text}\n```\n\nInline: `compare --primary x --no-such-option`.\n", encoding="utf-8")
    found = {mention.line: [option for option in unknown_options(root, mention.words)]
             for mention in mentions(page, set(root["commands"]))}
    assert found == {2: bad, 5: ["--no-such-option"]}


if __name__ == "__main__":  # the `root` fixture's fresh interpreter
    print(json.dumps(cli_tree()))
