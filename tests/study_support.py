"""What the study tests share: the plugins they run with (in this process and in a subprocess), and
the numbers a study document prints, read back by comparison."""

from __future__ import annotations

import importlib
import json
import os
import re
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from recall_kit.testing import registered_plugin

MODULES = {"recall-kit-fts5": "recall_kit_fts5", "recall-kit-bm25": "recall_kit_bm25",
           "recall-kit-fusion": "recall_kit_fusion", "recall-kit-dense": "recall_kit_dense",
           "recall-kit-graph": "recall_kit_graph", "recall-kit-llm": "recall_kit_llm",
           "recall-kit-postgres": "recall_kit_postgres", "recall-kit-mem0": "recall_kit_mem0",
           "recall-kit-remote": "recall_kit_remote", "recall-kit-example": "recall_kit_example"}


@contextmanager
def plugins(*distributions: str) -> Iterator[None]:
    """The named plugins registered for the block (skips the test when one is not installed)."""
    modules = []
    for name in distributions:
        try:
            modules.append(importlib.import_module(MODULES[name]))
        except ImportError:
            pytest.skip(f"needs {name}")
    with ExitStack() as stack:
        for module in modules:
            stack.enter_context(registered_plugin(module, name=f"{module.__name__}-for-study-test"))
        yield


def subprocess_env(*distributions: str) -> dict[str, str]:
    """The environment of a `recall-kit` subprocess that loads exactly these plugins."""
    return {**os.environ, "RECALL_KIT_LOAD_PLUGINS": ",".join(distributions), "PYTHONUNBUFFERED": "1"}


#: The end of a small study file: the two lexical systems, three queries timed each.
LEXICAL_PAIR = """
[[systems]]
name = "fts5"
retriever = "fts5"

[[systems]]
name = "bm25"
retriever = "bm25"

[cost]
latency_sample = 3
"""

#: The example store, as a study's [store] dataset.
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "memories"


#: The plugins the example study's systems use.
STUDY_PLUGINS = ("recall-kit-fts5", "recall-kit-bm25", "recall-kit-fusion", "recall-kit-dense", "recall-kit-graph")


def run_example_study(folder: Path, proxy: str = "default", cache: Path | None = None) -> Path:
    """`recall-kit study run examples/study.toml`, as docs/study.md runs it, in `folder` laid out as a
    clone's examples/ (the store, the recipes and the study file copied), in a process of its own
    through benchmarks/portability_proxies.py under `proxy` (``default``: nothing changed), with
    `cache` as RECALL_KIT_CACHE (default: the test run's), loading the study's plugins. Returns the study folder
    (`folder`/examples/study-out)."""
    import shutil
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    examples = folder / "examples"
    examples.mkdir(parents=True)
    for name in ("memories", "systems"):
        shutil.copytree(root / "examples" / name, examples / name, symlinks=False)
    shutil.copy2(root / "examples" / "study.toml", examples / "study.toml")
    env = {**subprocess_env(*STUDY_PLUGINS), "RECALL_KIT_CACHE": str(cache or os.environ["RECALL_KIT_CACHE"])}
    done = subprocess.run([sys.executable, str(root / "benchmarks" / "portability_proxies.py"), proxy, "--",
                           "study", "run", "examples/study.toml"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    return examples / "study-out"


def study_text(folder: str | None = "out", extra: str = "") -> str:
    """A small study file over the example store: two lexical systems, 50 resamples, `extra` lines
    in [study]; no `folder` line with `folder=None`."""
    line = "" if folder is None else f"folder = {json.dumps(folder)}\n"
    return (f'[study]\nname = "t"\n{line}resamples = 50\n{extra}\n[store]\ndataset = "{EXAMPLE.as_posix()}"\n'
            '[evaluation_set]\nqueries = "dataset"\n' + LEXICAL_PAIR)


# -- the numbers a study document prints ------------------------------------------------------

NUMBER = r"([+-]\d+\.\d{4})"
Key = tuple[str, str, str, str]  # (system, against, scope, metric): delta = system - against


def tables(markdown: str) -> dict[str, list[list[str]]]:
    """Each '## title' section's table rows (header and rule left out), as cells."""
    found: dict[str, list[list[str]]] = {}
    for section in markdown.split("\n## ")[1:]:
        title, _, body = section.partition("\n")
        rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
                for line in body.splitlines() if line.startswith("|")]
        found[title.strip()] = rows[2:]
    return found


class Numbers:
    """Every delta the document prints, by comparison (the sign read the way round its key says)."""

    def __init__(self) -> None:
        self.deltas: dict[Key, set[str]] = defaultdict(set)
        self.means: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        self.where: dict[Key, list[str]] = defaultdict(list)

    def delta(self, system: str, against: str, scope: str, metric: str, value: str, where: str) -> None:
        number = float(value)
        if system > against:  # one key per pair of systems: the other way round is the negated delta
            system, against, number = against, system, -number
        key = (system, against, scope, metric)
        self.deltas[key].add(f"{number + 0.0:+.4f}")
        self.where[key].append(where)

    def sentences(self, system: str, against: str, scope: str, text: str, where: str) -> None:
        """Each "metric +0.1234 [" in `text`: a delta of system - against."""
        for metric, value in re.findall(r"([a-z_]+@\d+) " + NUMBER + r" [\[,]", text):
            self.delta(system, against, scope, metric, value, where)


def disagreements(numbers: Numbers) -> dict[object, object]:
    """Each comparison (or mean) printed with more than one number, with where it was printed."""
    deltas = {key: (values, numbers.where[key]) for key, values in numbers.deltas.items() if len(values) > 1}
    return {**deltas, **{key: values for key, values in numbers.means.items() if len(values) > 1}}


def read_numbers(markdown: str, study: Any) -> Numbers:
    """Every delta and mean study.md prints, by comparison (see `Numbers`)."""
    baseline = study.baseline
    ablated = next((s.name for s in study.systems if s.retriever == study.ablation.system), None)
    found = Numbers()
    sections = tables(markdown)
    for scope, system, metric, _, base, value, delta, *_ in sections[f"Head-to-head against {baseline}, per stratum"]:
        found.delta(system, baseline, scope, metric, delta, "head-to-head")
        found.means[(baseline, scope, metric)].add(base)
        found.means[(system, scope, metric)].add(value)
    simplest = next((title for title in sections if title.startswith("Simplest adequate system: ")), "")
    best = simplest.removeprefix("Simplest adequate system: ").split(" against ")[0]
    for simpler, _, metric, delta, *_ in sections.get(simplest, []):
        found.delta(simpler, best, "overall", metric, delta, "simplest table")
    for scope, system, _, because, _ in sections.get("Recommendation", []):
        found.sentences(system, baseline, scope, because, "recommendation table")
    for scope, _, _, metric, delta, *_ in sections.get("What the unjudged pairs can do to each verdict", []):
        verdict_system = next(row[1] for row in sections.get("Recommendation", []) if row[0] == scope)
        found.delta(verdict_system, baseline, scope, metric, delta, "bounds table")
    bottom = markdown.split("## Bottom line", 1)[1].split("\n## ", 1)[0]
    for line in bottom.splitlines():
        verdict = re.match(r"- (Adopt|Do not adopt|Inconclusive): (\S+) against (\S+) over all queries", line)
        if verdict:
            found.sentences(verdict.group(2), verdict.group(3), "overall", line, "bottom line verdict")
        legs = re.match(r"- What the \w+ leg buys: (?:the best candidate \((\S+)\) has no \w+ leg; (\S+) \(the best "
                        r"with one\) over it|(\S+) over (\S+) \()", line)
        if legs:
            over, under = (legs.group(2), legs.group(1)) if legs.group(1) else (legs.group(3), legs.group(4))
            found.sentences(over, under, "overall", line.split(":", 1)[1], "bottom line leg")
    holes = markdown.split("\n### Holes: ", 1)[-1].split("\n### ", 1)[0] if "\n### Holes: " in markdown else ""
    for line in holes.splitlines():
        flip = re.match(r"- evidence: (\S+) \(([^)]+)\): (?:can|cannot) flip", line)
        if flip:
            verdict_system = next(row[1] for row in sections.get("Recommendation", []) if row[0] == flip.group(1))
            for metric, value in re.findall(r"([a-z_]+@\d+) " + NUMBER + ",", line):
                found.delta(verdict_system, baseline, flip.group(1), metric, value, "holes threat")
    if ablated is not None:
        ablation = next((rows for title, rows in sections.items() if title.startswith("Ablation of ")), [])
        header = markdown.split("## Ablation of ", 1)[1].splitlines()[2]
        metrics = [cell.strip() for cell in header.strip().strip("|").split("|")][2:]
        for row in ablation:
            if row[1] == "full":
                for metric, value in zip(metrics, row[2:], strict=True):
                    found.means[(ablated, "overall", metric)].add(value)
    return found


@contextmanager
def tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """A real tmpfs mounted at `folder` (made here) with mount `options` (``ro,size=64k``: a
    read-only folder; ``size=256k``: a small disk), unmounted after; root only: elsewhere the test
    is skipped."""
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "none", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs ({options}) here (not root)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)
