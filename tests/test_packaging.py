"""Installing outside `make`: every plugin is in the host's `all` extra, and the wheels `make wheels`
writes install into a fresh virtual environment with no package index (one plugin alone, then all)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = sorted(path.parent for path in ROOT.glob("plugins/*/pyproject.toml"))


def _name(pyproject: Path) -> str:
    return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"])


def test_the_all_extra_lists_every_plugin():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    listed = {entry.split("[")[0].split(">")[0].split("=")[0].strip() for entry in extras["all"]}
    assert listed == {_name(plugin / "pyproject.toml") for plugin in PLUGINS}


def _dependency_folder(target: Path) -> Path:
    """This environment's installed packages, minus recall-kit and its plugins (editable here),
    linked into one folder: the fresh environment sees them as installed, so pip installs only the
    wheels, offline, in seconds."""
    import site

    packages = Path(site.getsitepackages()[0])
    target.mkdir()
    for entry in packages.iterdir():
        lowered = entry.name.lower()
        if (lowered.startswith(("recall_kit", "recall-kit", "__editable__", "_recall_kit", "__pycache__"))
                or lowered.endswith(".pth")):
            continue
        (target / entry.name).symlink_to(entry)
    return target


def _make_wheels(tmp_path: Path) -> Path:
    """`make wheels` into tmp_path/dist, from a copy of the checkout's files (no .venv, no results,
    so the build leaves nothing in the checkout), this environment standing in for .venv."""
    dist = tmp_path / "dist"
    source = tmp_path / "src"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split()
    for name in listed:
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    (source / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    built = subprocess.run(["make", "-o", ".venv/.installed", "wheels", f"DIST={dist}"], cwd=source,
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    return dist


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheels of one `make wheels`, shared by the module's tests (each only reads them)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    return _make_wheels(tmp_path_factory.mktemp("wheels"))


def _fresh_environment(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A fresh virtual environment that sees this one's dependencies (not recall-kit), and the
    environment variables a new user's shell would have (none of this session's RECALL_KIT_*)."""
    fresh = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=False).create(fresh)
    site_packages = next((fresh / "lib").glob("python3*/site-packages"))
    (site_packages / "dependencies.pth").write_text(str(_dependency_folder(tmp_path / "deps")) + "\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV", "RECALL_KIT_"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return fresh, env


def _pip_install(fresh: Path, dist: Path, env: dict[str, str], cwd: Path, *requirements: str) -> None:
    """pip install from the wheels alone (no index) into `fresh`."""
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(fresh / "bin" / "python"), "install", "--quiet",
                           "--no-index", "--find-links", str(dist), *requirements],
                          cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow
def test_wheels_install_into_a_fresh_environment_without_an_index(tmp_path, dist):
    wheels = sorted(path.name.split("-")[0] for path in dist.glob("*.whl"))
    assert wheels == sorted(["recall_kit", *(_name(p / "pyproject.toml").replace("-", "_") for p in PLUGINS)])

    fresh, env = _fresh_environment(tmp_path)
    python = fresh / "bin" / "python"
    site_packages = next((fresh / "lib").glob("python3*/site-packages"))
    elsewhere = tmp_path / "elsewhere"  # not the checkout: its recall_kit/ must not be importable
    elsewhere.mkdir()

    def pip_install(*requirements: str) -> None:
        _pip_install(fresh, dist, env, elsewhere, *requirements)

    def recall_kit(*args: str) -> str:
        done = subprocess.run([str(fresh / "bin" / "recall-kit"), *args], cwd=elsewhere, env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    # One plugin: pip finds the host beside it in dist/, and --retriever graph works.
    pip_install("recall-kit-graph")
    where = subprocess.run([str(python), "-c", "import recall_kit, recall_kit_graph; print(recall_kit.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True)
    assert str(site_packages) in where.stdout, where.stdout + where.stderr
    retrievers = recall_kit("list", "retrievers")
    assert "graph" in retrievers and "dense" not in retrievers
    # Every plugin: the all extra.
    pip_install("recall-kit[all]")
    listing = recall_kit("plugins")
    for plugin in PLUGINS:
        assert _name(plugin / "pyproject.toml") in listing


@pytest.mark.slow
def test_the_documented_install_line_resolves_no_cuda_package(tmp_path, dist):
    """README's `pip install --find-links dist -c dist/constraints-cpu.txt 'recall-kit[all]'`,
    resolved (pip --dry-run) in a fresh environment: the CPU build of torch, no nvidia-* wheel, no
    triton. This machine's CPU torch comes from its PIP_FIND_LINKS, as the README's
    --extra-index-url (not reachable here) would serve it elsewhere. Needs the package index."""
    import json

    assert (dist / "constraints-cpu.txt").read_text().strip().endswith("+cpu")
    fresh = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=False).create(fresh)
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(fresh / "bin" / "python"), "install", "--dry-run", "--quiet",
         "--ignore-installed", "--report", str(report), "--find-links", str(dist),
         "-c", str(dist / "constraints-cpu.txt"), "recall-kit[all]"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900)
    if done.returncode != 0 and ("No matching distribution" in done.stderr or "Could not find" in done.stderr
                                 or "connection" in done.stderr.lower()):
        pytest.skip("the package index or a CPU build of torch is not reachable: " + done.stderr.strip()[-300:])
    assert done.returncode == 0, done.stderr[-2000:]
    names = {item["metadata"]["name"].lower(): item["metadata"]["version"]
             for item in json.loads(report.read_text())["install"]}
    assert names["torch"].endswith("+cpu")
    assert not [name for name in names if name.startswith("nvidia") or name == "triton"]


# -- a new user's first hour, from the wheels ---------------------------------------------------


def _numbers(text: str) -> list[str]:
    """The four-place numbers a page or an output gives ("+0.1333", "0.0160"), in order."""
    import re

    return re.findall(r"[+-]?\d\.\d{4}", text)


def _text_block_after(page: str, marker: str) -> str:
    """The first ```text block after `marker` on a page."""
    rest = page[page.index(marker):]
    start = rest.index("```text\n") + len("```text\n")
    return rest[start:rest.index("```", start)]


@pytest.mark.slow
def test_a_new_user_runs_the_readme_and_the_study_page_from_the_wheels(tmp_path, dist):
    """README's first evaluation and `make demo`'s two commands, then docs/study.md's example study,
    run in order in a fresh environment holding only the wheels (recall-kit[all]), in a folder
    holding a copy of examples/: the numbers each page gives are the numbers printed."""
    fresh, env = _fresh_environment(tmp_path)
    user = tmp_path / "user"
    (user / "results").mkdir(parents=True)
    _pip_install(fresh, dist, env, user, "recall-kit[all]")
    for name in ("memories", "systems", "study.toml"):
        copy = shutil.copytree if (ROOT / "examples" / name).is_dir() else shutil.copy2
        copy(ROOT / "examples" / name, user / "examples" / name)
    env["PATH"] = f"{fresh / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    def run(line: str) -> str:
        done = subprocess.run(["bash", "-c", line], cwd=user, env=env, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, f"{line}\n{done.stderr[-2000:]}"
        return done.stdout + done.stderr

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index("## A first evaluation"):].split("```sh\n", 1)[1].split("```", 1)[0]
    for line in block.splitlines():
        if line.strip() and not line.startswith(". "):  # the page's own .venv is this fresh one
            run(line)
    # make demo's commands, as the Makefile runs them, and README's numbers in what they print
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    variants = makefile.split("DEMO_VARIANTS := ", 1)[1].split("\n", 1)[0].split()
    printed = run("recall-kit ablate --dataset examples/memories --retriever fts5+dense+graph --fusion rrf "
                  "--metrics recall@10,ndcg@10,mrr --out-dir results/ablation --brief")
    run("recall-kit compare " + " ".join(f"results/ablation/{name}" for name in variants)
        + " --metrics recall@10,ndcg@10,mrr --report html --output results/ablation.html")
    page = (user / "results" / "ablation.html").read_text(encoding="utf-8")
    claimed = " ".join(readme[readme.index("`make demo` shows"):readme.index("results/ablation.html` leads")].split())
    for number in ("0.8833", "0.8292", "+0.0542 (ns)", "Holm p 0.3183 among 6 primary rows"):
        assert number in printed, number
    for number in ("0.883", "0.829", "+0.054 [-0.010, +0.122]", "+0.0542 (ns)", "Holm p 0.3183 among 6 primary rows"):
        assert number in claimed, number
    assert "Holm p 0.3183 among 6 primary rows" in page  # the page and the terminal: one p for the row
    # docs/study.md: the example study, its bottom line, and a rerun that computes nothing
    study_page = (ROOT / "docs" / "study.md").read_text(encoding="utf-8")
    first = run("recall-kit study run examples/study.toml")
    again = run("recall-kit study run examples/study.toml")
    status = run("recall-kit study status examples/study.toml")
    assert _text_block_after(study_page, "A second run with nothing changed").strip() in again, again
    document = (user / "examples" / "study-out" / "study.md").read_text(encoding="utf-8")
    bottom_line = _text_block_after(study_page, "opens with the bottom line")
    assert _numbers(bottom_line) and all(number in document for number in _numbers(bottom_line)), (
        [number for number in _numbers(bottom_line) if number not in document])
    assert "Traceback" not in first + status
