"""recall-kit: decide, with evidence, whether a change to your retrieval is real."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recall_kit import plugin as _plugin
from recall_kit.lazy import lazy_attributes

__version__ = "0.1.0"

if TYPE_CHECKING:
    from recall_kit.curate.export import export_dataset
    from recall_kit.curate.importers import import_dataset
    from recall_kit.curate.pool import pool_files
    from recall_kit.decide.ablate import run_ablation
    from recall_kit.decide.compare import compare_files, compare_results
    from recall_kit.decide.gate import run_gate
    from recall_kit.decide.score import ScoredRuns, compare, score_files
    from recall_kit.decide.sweep import run_sweep
    from recall_kit.measure.result import BenchmarkResult, QueryResult, load_result, load_results
    from recall_kit.measure.run.executor import RayExecutor
    from recall_kit.measure.run.runner import run_benchmark
    from recall_kit.measure.score.evaluation import evaluate_run as evaluate
    from recall_kit.measure.score.evaluation import score_trec_files
    from recall_kit.measure.score.trec import write_qrels
    from recall_kit.measure.systems.system import SystemSpec, build_system, load_config

    # Every name of the declared plugin API is recall_kit's too: plugin.__all__ is the one list.
    from recall_kit.plugin import *  # noqa: F403

# What the CLI does, callable from Python. These import numpy-heavy code: loaded on first use, so
# `import recall_kit` (and `recall-kit --help`) stays fast.
_LAZY = {
    "evaluate": "recall_kit.measure.score.evaluation:evaluate_run",
    "SystemSpec": "recall_kit.measure.systems.system",
    "build_system": "recall_kit.measure.systems.system",
    "load_config": "recall_kit.measure.systems.system",
    "run_benchmark": "recall_kit.measure.run.runner",
    "BenchmarkResult": "recall_kit.measure.result",
    "QueryResult": "recall_kit.measure.result",
    "load_result": "recall_kit.measure.result",
    "load_results": "recall_kit.measure.result",
    "score_trec_files": "recall_kit.measure.score.evaluation",
    "write_qrels": "recall_kit.measure.score.trec",
    "RayExecutor": "recall_kit.measure.run.executor",
    "score_files": "recall_kit.decide.score",
    "compare": "recall_kit.decide.score",
    "ScoredRuns": "recall_kit.decide.score",
    "compare_results": "recall_kit.decide.compare",
    "compare_files": "recall_kit.decide.compare",
    "run_gate": "recall_kit.decide.gate",
    "run_ablation": "recall_kit.decide.ablate",
    "run_sweep": "recall_kit.decide.sweep",
    "import_dataset": "recall_kit.curate.importers",
    "export_dataset": "recall_kit.curate.export",
    "pool_files": "recall_kit.curate.pool",
}


_lazy = lazy_attributes(__name__, _LAZY)


def __getattr__(name: str) -> Any:
    """The library's entry points on first use (`_LAZY`), and every name of the plugin API."""
    if name in _LAZY:
        return _lazy(name)
    if name in _plugin.__all__:
        return getattr(_plugin, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "__version__", "BenchmarkResult", "build_system", "compare", "compare_files", "compare_results",
    "evaluate", "export_dataset", "import_dataset", "load_config", "load_result", "load_results", "pool_files",
    "QueryResult", "RayExecutor", "run_ablation", "run_benchmark", "run_gate", "run_sweep", "score_files",
    "score_trec_files", "ScoredRuns", "SystemSpec", "write_qrels",
]
__all__ += _plugin.__all__  # every name of the plugin API, from its one list
