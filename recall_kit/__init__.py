"""recall-kit: decide, with evidence, whether a change to your retrieval is real."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recall_kit.errors import DatasetError, RecallKitError
from recall_kit.hookspecs import hookimpl
from recall_kit.types import (
    Corpus,
    Fusion,
    FusionRequest,
    Hit,
    Importer,
    JudgedRankings,
    Memory,
    Metric,
    Qrels,
    Query,
    Report,
    Reporter,
    ReportTable,
    Retriever,
    sort_hits,
)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from recall_kit.dataset import Dataset, load_dataset
    from recall_kit.evaluation import evaluate_run as evaluate
    from recall_kit.runner import BenchmarkResult, run_benchmark

# The dataset loader and the runner import numpy-heavy code; load them on first use.
_LAZY = {
    "evaluate": "recall_kit.evaluation:evaluate_run",
    "Dataset": "recall_kit.dataset",
    "load_dataset": "recall_kit.dataset",
    "run_benchmark": "recall_kit.runner",
    "BenchmarkResult": "recall_kit.runner",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, _, attribute = _LAZY[name].partition(":")
        return getattr(importlib.import_module(module), attribute or name)
    raise AttributeError(f"module 'recall_kit' has no attribute {name!r}")


__all__ = [
    "BenchmarkResult", "Corpus", "Dataset", "DatasetError", "Fusion", "FusionRequest", "Hit",
    "Importer", "JudgedRankings", "Memory", "Metric", "Qrels", "Query", "RecallKitError", "evaluate",
    "Report", "ReportTable", "Reporter", "Retriever", "__version__", "hookimpl", "load_dataset",
    "run_benchmark", "sort_hits",
]
