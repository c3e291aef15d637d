"""End to end: `pip install` the example plugin into a throwaway virtual environment, then
`recall-kit plugins` lists it and `recall-kit eval --retriever example` runs it.

The environment is clean: it holds recall-kit and recall-kit-example, installed (not editable)
from copies of their source, and sees only recall-kit's runtime dependencies (plus pip and
setuptools to install), linked from this interpreter's site-packages through a .pth file, so
nothing is downloaded and nothing else installed here (torch, the other plugins) is visible.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recall_kit import load_result

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "recall-kit-example"
MEMORIES = ROOT / "examples" / "memories"

pytestmark = pytest.mark.slow


def _requirement_names(distribution: str) -> list[str]:
    """Names of `distribution`'s requirements that apply here (no extras)."""
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pip always carries a copy
        from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    names = []
    for line in importlib.metadata.requires(distribution) or []:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            names.append(requirement.name)
    return names


def _runtime_closure(root: str) -> set[str]:
    """`root` and every distribution it needs at run time, transitively."""
    seen: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        todo.extend(_requirement_names(name))
    return seen


def _link_distributions(names: set[str], target: Path) -> list[str]:
    """Symlink each installed distribution's top-level files and folders into `target`."""
    target.mkdir()
    linked = []
    for name in sorted(names):
        distribution = importlib.metadata.distribution(name)
        base = Path(str(distribution.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in distribution.files or [] if not str(f).startswith("..")}
        for top in sorted(tops):
            source = base / top
            if top.endswith(".pth") or top == "__pycache__" or not source.exists():
                continue
            if not (target / top).exists():
                (target / top).symlink_to(source)
        linked.append(f"{distribution.metadata['Name']}=={distribution.version}")
    return linked


def _copy_source(source: Path, destination: Path, parts: list[str]) -> Path:
    """Copy the parts of a project that building needs, so building leaves nothing in the tree."""
    destination.mkdir(parents=True)
    for part in parts:
        if (source / part).is_dir():
            shutil.copytree(source / part, destination / part,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        elif (source / part).exists():
            shutil.copy2(source / part, destination / part)
    if not (destination / "README.md").exists():
        (destination / "README.md").write_text("recall-kit\n", encoding="utf-8")
    return destination


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=300,
                               check=False)
    assert completed.returncode == 0, (
        f"{' '.join(map(str, args))} exited {completed.returncode}\n"
        f"stdout:\n{completed.stdout[-3000:]}\nstderr:\n{completed.stderr[-3000:]}"
    )
    return completed


def test_pip_install_the_example_then_plugins_lists_it_and_eval_runs_it(tmp_path: Path) -> None:
    timings: dict[str, float] = {}
    started = time.perf_counter()
    env = {key: value for key, value in os.environ.items()
           if key not in ("RECALL_KIT_LOAD_PLUGINS", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site_packages = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              env, tmp_path).stdout.strip())
    needed = _runtime_closure("recall-kit") - {"recall-kit"} | {"pip", "setuptools"}
    linked = _link_distributions(needed, tmp_path / "host-deps")
    (site_packages / "_recall_kit_host_deps.pth").write_text(str(tmp_path / "host-deps") + "\n")
    timings["venv"] = time.perf_counter() - started

    host = _copy_source(ROOT, tmp_path / "src" / "recall-kit", ["pyproject.toml", "README.md", "recall_kit"])
    example = _copy_source(EXAMPLE, tmp_path / "src" / "recall-kit-example",
                           ["pyproject.toml", "README.md", "recall_kit_example"])
    mark = time.perf_counter()
    _run([str(python), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
          "--no-build-isolation", str(host), str(example)], env, tmp_path)
    timings["pip_install"] = time.perf_counter() - mark

    # Clean: recall-kit is the installed copy, and nothing else from here leaks in.
    script = (
        "import importlib.util, recall_kit, recall_kit_example;"
        "print(recall_kit.__file__); print(recall_kit_example.__file__);"
        "print(importlib.util.find_spec('torch') is None,"
        " importlib.util.find_spec('recall_kit_fts5') is None)"
    )
    probe = _run([str(python), "-c", script], env, tmp_path)
    host_file, example_file, isolation = probe.stdout.strip().splitlines()
    assert host_file.startswith(str(site_packages)) and example_file.startswith(str(site_packages))
    assert isolation == "True True"

    mark = time.perf_counter()
    table = _run([str(venv / "bin" / "recall-kit"), "plugins"], env, tmp_path).stdout
    assert "recall-kit-example" in table and "retrievers: example" in table
    listing = json.loads(_run([str(venv / "bin" / "recall-kit"), "plugins", "--json"], env, tmp_path).stdout)
    third_party = {p["name"]: p for p in listing["plugins"] if not p["builtin"]}
    assert list(third_party) == ["recall-kit-example"]
    assert third_party["recall-kit-example"]["version"] == "0.1.0"
    assert third_party["recall-kit-example"]["registers"] == {"retrievers": ["example"]}
    assert listing["errors"] == {}
    timings["plugins"] = time.perf_counter() - mark

    mark = time.perf_counter()
    out = tmp_path / "out.json"
    _run([str(venv / "bin" / "recall-kit"), "eval", "--dataset", str(MEMORIES), "--retriever", "example",
          "--json", str(out), "--latency-sample", "20"], env, tmp_path)
    timings["eval"] = time.perf_counter() - mark
    result = load_result(out)
    queries = sum(1 for line in (MEMORIES / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line.strip())
    assert result.system.legs[0].name == "example"
    assert result.system.legs[0].plugin == "recall-kit-example"
    assert result.manifest.plugins == {"recall-kit-example": "0.1.0"}
    assert result.n_queries == queries
    # A real bag-of-words retriever finds most exact-wording queries' memories, not all nothing.
    assert result.mean("recall@10", stratum="exact") > 0.8
    size = result.index.legs["example"].size_bytes
    assert size is not None and size > 0
    timings["total"] = time.perf_counter() - started
    print("throwaway-venv timings (s):", {k: round(v, 2) for k, v in timings.items()},
          "linked:", ", ".join(linked))
