"""Once installed, `recall-kit plugins` lists recall-kit-llm and what it registers; loading it
imports neither `llm` nor numpy (they load when a model is used)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_recall_kit_plugins_lists_it_once_installed():
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": "recall-kit-llm,recall-kit-graph"}
    completed = subprocess.run([sys.executable, "-m", "recall_kit", "plugins", "--json"], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    plugins = {info["name"]: info for info in json.loads(completed.stdout)["plugins"]}
    registers = plugins["recall-kit-llm"]["registers"]
    assert sorted(registers["generators"]) == ["llm-multihop", "llm-paraphrase"]
    assert registers["judges"] == ["llm"] and registers["retrievers"] == ["llm-embed"]
    assert registers["extractors"] == ["llm"]


def test_loading_the_plugin_imports_no_model_library():
    code = ("import sys, recall_kit_llm; from recall_kit.testing import registries; "
            "[r.names() for r in registries().values()]; "
            "print(sorted(m for m in ('llm', 'numpy', 'torch') if m in sys.modules))")
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": "recall-kit-llm"}
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"
