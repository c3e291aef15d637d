"""The install hints: PROVIDED_BY matches what each plugin folder registers, and a missing name's
error names every missing leg and fusion with what to install, or the allowlist that hides it."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from recall_kit.plugins import PROVIDED_BY

REPO = Path(__file__).resolve().parents[1]
PLUGIN_FOLDERS = sorted(REPO.glob("plugins/recall-kit-*")) + [REPO / "examples" / "recall-kit-example"]


def _registered_by(module_name: str) -> list[str]:
    """The retriever, fusion, query generator and judge names a plugin module registers, by calling
    its hooks directly."""
    module = importlib.import_module(module_name)
    names: list[str] = []
    for hook in ("register_retrievers", "register_fusions", "register_query_generators", "register_judges"):
        function = getattr(module, hook, None)
        if function is not None:
            function(register=lambda name, obj: names.append(name))
    return names


def test_provided_by_matches_every_plugin_folder():
    found: dict[str, str] = {}
    for folder in PLUGIN_FOLDERS:
        project = tomllib.loads((folder / "pyproject.toml").read_text())
        distribution = project["project"]["name"]
        for module_name in project["project"]["entry-points"]["recall_kit"].values():
            for name in _registered_by(module_name):
                found[name] = distribution
    # A name registered only with an extra installed is listed with the extra: `pkg[extra]`.
    assert found == {name: requirement.partition("[")[0] for name, requirement in PROVIDED_BY.items()}
    for requirement in PROVIDED_BY.values():
        base, _, extra = requirement.partition("[")
        if extra:
            folder = next(f for f in PLUGIN_FOLDERS if f.name == base)
            extras = tomllib.loads((folder / "pyproject.toml").read_text())["project"]["optional-dependencies"]
            assert extra.rstrip("]") in extras, requirement


def _run(args: list[str], allowlist: str | None, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "RECALL_KIT_LOAD_PLUGINS"}
    if allowlist is not None:
        env["RECALL_KIT_LOAD_PLUGINS"] = allowlist
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


@pytest.mark.slow
def test_every_missing_leg_and_fusion_is_named_with_its_package(tmp_path):
    args = ["eval", "-d", str(REPO / "examples" / "memories"), "-r", "fts5+dense+graph", "--fusion", "rrf"]
    # Only graph allowed: the other three names are installed here but hidden by the allowlist.
    hidden = _run(args, "recall-kit-graph", REPO)
    assert hidden.returncode == 2
    line = hidden.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    assert line.startswith("Error: Unknown retriever 'fts5', retriever 'dense', fusion 'rrf'.")
    assert "Available retrievers: graph; fusions: (none installed)." in line
    assert ("RECALL_KIT_LOAD_PLUGINS='recall-kit-graph' hides the installed recall-kit-fts5 (fts5), "
            "recall-kit-dense (dense), recall-kit-fusion (rrf): add them to the list, or unset it.") in line


def test_not_installed_names_get_pip_and_clone_commands(monkeypatch, tmp_path):
    from recall_kit.plugins import install_hints

    monkeypatch.delenv("RECALL_KIT_LOAD_PLUGINS", raising=False)
    monkeypatch.setattr("recall_kit.plugins.hidden_by_allowlist", lambda: [])
    monkeypatch.chdir(tmp_path)  # not a clone: pip only
    assert install_hints(["fts5", "rrf", "grph"]) == [
        "recall-kit-fts5 provides 'fts5'; recall-kit-fusion provides 'rrf': pip install recall-kit-fts5 recall-kit-fusion"
    ]
    monkeypatch.chdir(REPO)  # in the clone: the folders too
    assert install_hints(["pg-fts"]) == [
        "recall-kit-postgres provides 'pg-fts': pip install recall-kit-postgres "
        "(in this clone: make wheels, then pip install --find-links dist recall-kit-postgres)"
    ]
    assert install_hints(["grph"]) == []
    assert install_hints(["pgvector"]) == [
        "recall-kit-postgres[vector] provides 'pgvector': pip install 'recall-kit-postgres[vector]' "
        "(in this clone: make wheels, then pip install --find-links dist 'recall-kit-postgres[vector]')"
    ]


def test_a_typo_gets_a_suggestion(overlap_plugin):
    from recall_kit import registry

    error = registry.unknown_names_error([(registry.retrievers, "overlpa")])
    assert str(error).startswith("Unknown retriever 'overlpa' (did you mean 'overlap'?). Available: ")
