"""recall-kit: decide, with evidence, whether a change to your retrieval is real."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.lazy import lazy_attributes

# The plugin base types and helpers, as the declared plugin API (recall_kit.plugin) exports them.
from recall_kit.plugin import (
    Corpus,
    DatasetError,
    FailedSearch,
    Fusion,
    FusionRequest,
    GeneratedQuery,
    Hit,
    Importer,
    JudgedRankings,
    Memory,
    Metric,
    Qrels,
    Query,
    QueryGenerator,
    RecallKitError,
    RelevanceJudge,
    Report,
    Reporter,
    ReportTable,
    Retriever,
    hookimpl,
    id_ranks,
    sort_hits,
    top_hits,
)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from recall_kit.curate.export import export_dataset
    from recall_kit.curate.importers import import_dataset
    from recall_kit.curate.pool import pool_files
    from recall_kit.dataset import Dataset, load_dataset
    from recall_kit.decide.ablate import run_ablation
    from recall_kit.decide.compare import compare_files, compare_results
    from recall_kit.decide.gate import run_gate
    from recall_kit.decide.score import ScoredRuns, compare, score_files
    from recall_kit.decide.sweep import run_sweep
    from recall_kit.measure.score.evaluation import evaluate_run as evaluate
    from recall_kit.measure.score.evaluation import score_trec_files
    from recall_kit.measure.result import BenchmarkResult, QueryResult, load_result, load_results
    from recall_kit.measure.run.runner import run_benchmark
    from recall_kit.measure.systems.system import SystemSpec, build_system, load_config

# What the CLI does, callable from Python. These import numpy-heavy code: loaded on first use, so
# `import recall_kit` (and `recall-kit --help`) stays fast.
_LAZY = {
    "evaluate": "recall_kit.measure.score.evaluation:evaluate_run",
    "Dataset": "recall_kit.dataset",
    "load_dataset": "recall_kit.dataset",
    "SystemSpec": "recall_kit.measure.systems.system",
    "build_system": "recall_kit.measure.systems.system",
    "load_config": "recall_kit.measure.systems.system",
    "run_benchmark": "recall_kit.measure.run.runner",
    "BenchmarkResult": "recall_kit.measure.result",
    "QueryResult": "recall_kit.measure.result",
    "load_result": "recall_kit.measure.result",
    "load_results": "recall_kit.measure.result",
    "score_trec_files": "recall_kit.measure.score.evaluation",
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


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "BenchmarkResult", "Corpus", "Dataset", "DatasetError", "FailedSearch", "Fusion", "FusionRequest", "GeneratedQuery",
    "Hit", "Importer", "JudgedRankings", "Memory", "Metric", "Qrels", "Query", "QueryGenerator",
    "QueryResult", "RelevanceJudge", "RecallKitError", "Report", "ReportTable", "Reporter", "Retriever", "ScoredRuns",
    "SystemSpec", "__version__", "build_system", "compare", "compare_files",
    "evaluate", "compare_results", "export_dataset", "hookimpl",
    "import_dataset", "load_config", "load_dataset", "load_result", "load_results", "pool_files", "run_ablation",
    "run_benchmark", "run_gate", "run_sweep", "score_files", "score_trec_files", "sort_hits", "top_hits", "id_ranks",
]
