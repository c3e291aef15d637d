"""Every fenced shell block of README.md and docs/ runs as written, so a doc cannot drift from the code.

A block fenced ```sh, ```bash or ```shell runs whole; in a ```console block only the `$ ` lines
run (with their `\\` continuations), the other lines being output. The blocks of one page run in
order, as a reader following the page would run them: in one scratch folder that looks like a clone
(examples/, plugins/ and .venv/ link to this repository), with `export`s and `cd`s carried from one
block to the next, and with the installed `recall-kit` first on PATH.

A comment on the line before a fence says how to run it:

- `<!-- doc-test: skip REASON -->`: not run (it installs packages, needs a service or data this
  repository cannot ship, or is interactive); REASON says which.
- `<!-- doc-test: slow -->`: run, but only when RECALL_KIT_DOC_TESTS is not `fast` (it loads a
  model or installs into the environment).
- `<!-- doc-test: repeated -->`: not run here, because every one of its lines runs, as written, in
  a later block of the same page (checked), as when a page ends with all its commands again.
- `<!-- doc-test: exit=N -->`: the block is expected to end with exit status N (a gate that fails).
- `<!-- doc-test: cwd=tmp -->`: run in a fresh empty folder (commands that create packages).
- `<!-- doc-test: file=NAME -->` (before any block, e.g. ```python): the block is a file the
  reader is told to write; it is written as NAME in the current folder.
- `<!-- doc-test: cleanup=DIST -->`: a block that installs a package it made (DIST). It runs in a
  throwaway virtual environment layered over this one (it sees everything installed here, and its
  `pip` installs into it alone), dropped after the block: this environment is left as `make` made it
  (`test_shell_blocks_run_as_written` compares `pip freeze` before and after such a page), and no
  other test running beside it sees the package. A block that runs `pip install` or `pip uninstall`
  needs this marker (checked).

A synopsis (`recall-kit eval --dataset PATH ...`) is fenced ```text, not as a shell block.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHELLS = {"sh", "bash", "shell", "console"}
_MARKER = re.compile(r"<!--\s*doc-test:\s*(.*?)\s*-->")


@dataclass
class Block:
    page: str
    line: int
    language: str
    text: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def script(self) -> str:
        if self.language != "console":
            return self.text
        commands: list[str] = []
        continuing = False
        for line in self.text.splitlines():
            if line.startswith("$ ") or continuing:
                commands.append(line[2:] if line.startswith("$ ") and not continuing else line)
                continuing = line.rstrip().endswith("\\")
        return "\n".join(commands)


def _marker_before(lines: list[str], index: int) -> str | None:
    before = index - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    marker = _MARKER.search(lines[before]) if before >= 0 else None
    return marker.group(1) if marker else None


def shell_blocks(page: Path) -> list[Block]:
    """The shell blocks of a page, with the options of the marker comment just before each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = re.match(r"^```(\w*)\s*$", lines[index])
        if not opening:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        language = opening.group(1)
        file_marker = _marker_before(lines, index)
        if file_marker and "file=" in file_marker:
            name = file_marker.split("file=")[1].split()[0]
            blocks.append(Block(str(page.relative_to(REPO)), index + 1, language,
                                "\n".join(lines[index + 1:end]), {"file": name}))
        elif language in SHELLS:
            options: dict[str, str] = {}
            before = index - 1
            while before >= 0 and not lines[before].strip():
                before -= 1
            marker = _MARKER.search(lines[before]) if before >= 0 else None
            if marker:
                for word in marker.group(1).split():
                    key, _, value = word.partition("=")
                    options.setdefault(key, value)
                if "skip" in options:
                    options["skip"] = marker.group(1).partition("skip")[2].strip()
            blocks.append(Block(str(page.relative_to(REPO)), index + 1, language,
                                "\n".join(lines[index + 1:end]), options))
        index = end + 1
    return blocks


PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
RUNNABLE = [page for page in PAGES
            if any("skip" not in b.options and "file" not in b.options and b.script.strip() for b in shell_blocks(page))]


def test_every_page_is_covered_and_every_skip_says_why():
    for page in PAGES:
        for block in shell_blocks(page):
            if "skip" in block.options:
                assert block.options["skip"], f"{block.page}:{block.line}: doc-test skip needs a reason"
    names = {page.relative_to(REPO).as_posix() for page in RUNNABLE}
    assert {"README.md", "docs/user-guide.md", "docs/plugin-guide.md", "docs/deciding.md",
            "docs/evaluation-set.md"} <= names


def _repeated_later(blocks: list[Block], index: int) -> bool:
    """Whether every line of blocks[index] is a line of one later block that runs."""
    lines = [line.strip() for line in blocks[index].script.splitlines() if line.strip()]
    return any(set(lines) <= {line.strip() for line in later.script.splitlines()}
               for later in blocks[index + 1:]
               if not ({"skip", "file", "repeated"} & set(later.options)))


def test_a_repeated_block_runs_later_on_its_page():
    marked = 0
    for page in PAGES:
        blocks = shell_blocks(page)
        for index, block in enumerate(blocks):
            if "repeated" in block.options:
                marked += 1
                assert _repeated_later(blocks, index), (
                    f"{block.page}:{block.line}: marked doc-test: repeated, but no later block runs its lines")
    assert marked  # docs/postgres.md's ef_search sweep
    edited = [Block("x.md", 1, "sh", "recall-kit a\nrecall-kit b", {"repeated": ""}),
              Block("x.md", 9, "sh", "recall-kit a --changed\nrecall-kit b")]
    assert not _repeated_later(edited, 0)


def _scratch(tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("plugins", "benchmarks", ".venv"):
        if (REPO / name).exists():
            (clone / name).symlink_to(REPO / name)
    # examples/ is a folder of the clone's own, its files copied and its folders linked: what a
    # documented command writes beside a file of it (a study's folder, `examples/study-out/`) lands
    # in the scratch folder, as in a reader's fresh clone, never in this checkout.
    (clone / "examples").mkdir()
    for entry in sorted((REPO / "examples").iterdir()):
        if entry.name == "study-out" or entry.name.startswith("."):
            continue  # what an earlier run in this checkout left, not part of a fresh clone
        if entry.is_dir():
            (clone / "examples" / entry.name).symlink_to(entry)
        else:
            shutil.copyfile(entry, clone / "examples" / entry.name)
    return clone


def _written_in_repository() -> set[str]:
    """What git sees new or changed, ignored files included, in the folders the scratch clone links
    to this repository (a documented command writing through a link writes into the checkout);
    byte-code and build metadata aside. Empty outside a git checkout."""
    done = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all", "--",
                           "examples", "plugins", "benchmarks"], cwd=REPO, capture_output=True, text=True)
    return {line for line in done.stdout.splitlines()
            if "__pycache__" not in line and ".egg-info" not in line and not line.endswith(".pyc")}


@pytest.fixture(scope="session")
def onnx_exports(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """The bundled MiniLM's ONNX export (recall-kit-dense), made once for the run by the plugin
    itself, in the run's cache folder; None without the plugin. Each page's cache starts with links to it, as a
    reader's cache holds it after their first dense command: a page pays for its own embeddings,
    not for exporting the model again."""
    import importlib.util

    if importlib.util.find_spec("recall_kit_dense") is None:
        return None
    # The run's cache folder (the root conftest's, shared by the xdist workers): one export a run.
    cache = Path(os.environ["RECALL_KIT_CACHE"]) if os.environ.get("RECALL_KIT_CACHE") else tmp_path_factory.mktemp("onnx-exports")
    code = ("from recall_kit_dense.models import DEFAULT_MODEL, resolve_model\n"
            "from recall_kit_dense.onnx_backend import load_onnx_model\n"
            "assert load_onnx_model(resolve_model(DEFAULT_MODEL), None, 1) is not None\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=900,
                   env={**os.environ, "RECALL_KIT_CACHE": str(cache)})
    return cache / "dense" / "onnx"


def _page_cache(folder: Path, exports: Path | None) -> Path:
    """A page's own RECALL_KIT_CACHE, holding hard links to the session's ONNX exports."""
    if exports is not None:
        import shutil

        for export in exports.iterdir():  # complete exports only: a `.partial` one is being written
            if not export.name.startswith("."):
                # A file being written (`.NAME.partial`: ONNX Runtime's rewrite of the graph) is left out.
                shutil.copytree(export, folder / "dense" / "onnx" / export.name, copy_function=os.link,
                                ignore=shutil.ignore_patterns(".*"))
    return folder


def _installs_or_studies(page: Path) -> bool:
    """A page that installs a plugin into the shared venv for a while (`cleanup=`), or that runs a
    study: a study's fingerprints hold every installed recall-kit distribution's version, so a plugin
    installed by another page between its `study run` and `study status` makes every step stale."""
    return any("cleanup" in block.options or re.search(r"recall-kit study (run|status)", block.script)
               for block in shell_blocks(page))


#: Those pages run one after another on one worker (`--dist loadgroup`), never beside each other.
PAGES_TO_RUN = [pytest.param(page, marks=[pytest.mark.xdist_group("installed-plugins")] if _installs_or_studies(page) else [])
                for page in RUNNABLE]


_PIP_CHANGES = re.compile(r"\bpip3?\s+(install|uninstall)\b|-m\s+pip\s+(install|uninstall)\b")


def test_every_block_that_installs_runs_in_a_throwaway_environment():
    for page in PAGES:
        for block in shell_blocks(page):
            if {"skip", "file"} & set(block.options) or not _PIP_CHANGES.search(block.script):
                continue
            assert "cleanup" in block.options, (
                f"{block.page}:{block.line}: runs pip install/uninstall; mark it doc-test: cleanup=DIST so it "
                "runs in a throwaway environment, not the one make made")


def _pip_freeze() -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pip", "freeze", "--all"], capture_output=True, text=True,
                          timeout=300, check=True)
    return sorted(line for line in done.stdout.splitlines() if line.strip())


def _throwaway_environment(folder: Path) -> Path:
    """A virtual environment at `folder` that sees every distribution installed here (a .pth adds
    this environment's site-packages after its own) and installs into itself alone: its `bin/`
    holds this environment's scripts (recall-kit, pytest, pip ...) run by its own interpreter."""
    import sysconfig
    import venv

    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = folder / "bin" / "python"
    own = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              capture_output=True, text=True, check=True, timeout=120).stdout.strip())
    host = [sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    (own / "_host_environment.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({path!r})" for path in dict.fromkeys(host)) + "\n")
    host_bin = Path(sys.executable).parent
    for script in sorted(host_bin.iterdir()):
        target = folder / "bin" / script.name
        if target.exists() or target.is_symlink() or not script.is_file():
            continue
        try:
            head, _, rest = script.read_bytes().partition(b"\n")
        except OSError:
            continue
        if head.startswith(b"#!") and b"python" in head:  # a console script: the same, run by the throwaway python
            target.write_bytes(b"#!" + str(python).encode() + b"\n" + rest)
            target.chmod(0o755)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES_TO_RUN, ids=lambda page: page.relative_to(REPO).as_posix())
def test_shell_blocks_run_as_written(page: Path, tmp_path: Path, onnx_exports: Path | None) -> None:
    before = _written_in_repository()
    installs = any("cleanup" in block.options for block in shell_blocks(page))
    frozen = _pip_freeze() if installs else []
    _run_page(page, tmp_path, onnx_exports)
    # A documented command writes only into the page's scratch folder, never into the checkout.
    assert _written_in_repository() - before == set(), page
    # and a page that installs a package leaves this environment as make made it (issue 70: the
    # tutorial's cleanup had uninstalled recall-kit-example from .venv).
    assert not installs or _pip_freeze() == frozen, page


def _run_page(page: Path, tmp_path: Path, onnx_exports: Path | None) -> None:
    fast = os.environ.get("RECALL_KIT_DOC_TESTS") == "fast"
    clone = _scratch(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    bin_folder = Path(sys.executable).parent
    env = {key: value for key, value in os.environ.items()
           if key not in ("RECALL_KIT_LOAD_PLUGINS", "PYTHONPATH")}
    env["PATH"] = f"{bin_folder}{os.pathsep}{env.get('PATH', '')}"
    env["RECALL_KIT_CACHE"] = str(_page_cache(tmp_path / "cache", onnx_exports))
    (state / "env").write_text("")
    (state / "cwd").write_text(str(clone))
    ran = 0
    for number, block in enumerate(shell_blocks(page), start=1):
        if "file" in block.options:  # a file the reader is told to write, written where they are
            current = Path((state / "cwd").read_text().strip())
            (current / block.options["file"]).write_text(block.text + "\n", encoding="utf-8")
            continue
        if ("skip" in block.options or "repeated" in block.options or not block.script.strip()
                or (fast and "slow" in block.options)):
            continue
        cwd = tmp_path / f"block{number}" if block.options.get("cwd") == "tmp" else None
        if cwd is not None:
            cwd.mkdir()
        # The page's exports and cd carry over: load them, run the block, save them again.
        start = str(cwd) if cwd is not None else f"$(cat {state / 'cwd'})"
        enter = leave = ""
        if "cleanup" in block.options:  # it installs: into a throwaway environment, never this one
            throwaway = _throwaway_environment(tmp_path / f"venv{number}") / "bin"
            enter = f'export PATH="{throwaway}{os.pathsep}$PATH" VIRTUAL_ENV="{throwaway.parent}"\n'
            leave = f'export PATH="${{PATH#{throwaway}{os.pathsep}}}"\nunset VIRTUAL_ENV\n'  # the next blocks: this env
        script = (f'cd "{start}"\nsource {state / "env"}\n{enter}set -e\n{block.script}\nset +e\n{leave}'
                  f'export -p > {state / "env"}\n')
        if cwd is None:
            script += f"pwd > {state / 'cwd'}\n"
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=900)
        expected = int(block.options.get("exit", "0") or 0)
        assert done.returncode == expected, (
            f"{block.page}:{block.line}: exit {done.returncode}, expected {expected}\n"
            f"--- block\n{block.script}\n--- stdout (tail)\n{done.stdout[-3000:]}\n--- stderr (tail)\n{done.stderr[-3000:]}"
        )
        ran += 1
    assert ran or fast
