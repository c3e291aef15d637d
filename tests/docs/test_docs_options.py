"""Every `recall-kit` command and option named in README.md and docs/ exists: each command line in a
code block, and each inline code span that starts with `recall-kit` or with a command's name
(`` `compare --primary ...` ``), is walked against the click command tree the CLI builds (plugin
commands included), and an option the command does not accept fails here. A doc block skipped by
the doc tests is checked too: this test needs nothing but the text."""

from __future__ import annotations

import re
import shlex
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


def _command_tree():
    import click
    import typer

    from recall_kit.cli import get_app

    root = typer.main.get_command(get_app())
    assert isinstance(root, click.Group)
    return root


def _words(text: str) -> list[str]:
    text = text.replace("\\\n", " ")
    try:
        return shlex.split(text, comments=False)
    except ValueError:  # an unbalanced quote in prose: split on blanks
        return text.split()


def _commands_in(text: str, start_words: set[str]) -> list[tuple[str, ...]]:
    """Each run of words after `recall-kit` (or from a leading command name) up to a shell separator."""
    found = []
    words = _words(text)
    starts = [i + 1 for i, word in enumerate(words) if word.endswith("recall-kit") and not word.startswith("-")]
    if words and words[0] in start_words:
        starts.insert(0, 0)
    for start in starts:
        end = start
        while end < len(words) and words[end] not in {"|", "||", "&&", ";", ">", ">>", "2>", "&"} \
                and not words[end].startswith(("#", ">", "|")):
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
            found += [Mention(name, pending_line, words) for words in _commands_in(pending, set())]
            pending = ""
            continue
        for span in _INLINE.findall(line):
            found += [Mention(name, number, words) for words in _commands_in(span, start_words)]
    return found


def unknown_options(root, words: tuple[str, ...]) -> list[str]:
    """The options in `words` that the command they name does not accept (empty when all exist),
    or the first word that names no command of a group."""
    import click

    command: click.Command = root
    index = 0
    while isinstance(command, click.Group) and index < len(words):
        word = words[index]
        if word.startswith("-"):
            break
        child = command.get_command(click.Context(command), word)
        if child is None:
            # A placeholder (`recall-kit COMMAND --help`) or prose after the name; a real word that
            # names no command of the top-level group is reported.
            return [] if not word.islower() or word in {"...", "etc"} else [f"no command {word!r}"]
        command, index = child, index + 1
    accepted = {"--help"}
    for parameter in command.params:
        accepted.update(parameter.opts)
        accepted.update(parameter.secondary_opts)
    bad = []
    for word in words[index:]:
        option = word.strip("[]()`,.").split("=", 1)[0]
        if option.startswith("-") and len(option) > 1 and not option[1:2].isdigit() and option not in accepted:
            bad.append(option)
    return bad


def test_every_command_and_option_in_the_docs_exists():
    root = _command_tree()
    start_words = set(root.commands)
    problems = []
    for page in PAGES:
        for mention in mentions(page, start_words):
            for problem in unknown_options(root, mention.words):
                problems.append(f"{mention.page}:{mention.line}: recall-kit {' '.join(mention.words[:3])}: {problem}")
    assert not problems, "docs name options the commands do not accept:\n" + "\n".join(problems)


@pytest.mark.parametrize("text, bad", [
    ("recall-kit eval -d store -r bm25 --output results/bm25.json", ["--output"]),
    ("recall-kit eval -d store -r bm25 --json results/bm25.json", []),
    ("recall-kit dataset validate DIR --nope", ["--nope"]),
    ("recall-kit study run study.toml", []),
])
def test_an_option_a_command_lacks_is_found(tmp_path, text, bad):
    # Not vacuous: the false claim issue 51 found (`eval --output`) fails, its fix passes, and
    # sub-commands of a group are walked.
    page = tmp_path / "page.md"
    page.write_text(f"```sh\n{text}\n```\n\nInline: `compare --primary x --no-such-option`.\n", encoding="utf-8")
    root = _command_tree()
    found = {mention.line: [option for option in unknown_options(root, mention.words)]
             for mention in mentions(page, set(root.commands))}
    assert found == {2: bad, 5: ["--no-such-option"]}
