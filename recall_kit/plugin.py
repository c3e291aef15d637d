"""The declared plugin API: everything a plugin outside this package may import from recall-kit.

A plugin's code imports recall-kit from ``recall_kit.plugin`` alone (its tests add ``recall_kit``,
the library API, and ``recall_kit.testing``): an import-linter contract in ``pyproject.toml`` and
``tests/test_architecture.py`` hold every package under ``plugins/`` and ``examples/``, and the
scaffold's templates, to it. Names here are stable; anything else in recall-kit may move between
releases. The list is ``__all__``; docs/plugin-guide.md's reference lists the same names (tested).

Every name is cheap to import (no numpy): the heavier ones load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recall_kit.errors import (
    DatasetError,
    OptionError,
    PluginRunError,
    RecallKitError,
    UnknownNameError,
    debug_enabled,
)
from recall_kit.hookspecs import Register, hookimpl
from recall_kit.lazy import lazy_attributes
from recall_kit.masking import mask_secrets
from recall_kit.types import (
    Corpus,
    EmbedsInBatches,
    FailedSearch,
    Fusion,
    FusionRequest,
    GeneratedQuery,
    Hit,
    Importer,
    JudgedRankings,
    JudgingContext,
    Memory,
    Metric,
    NoOptions,
    PairEvidence,
    Qrels,
    Query,
    QueryGenerator,
    RelevanceJudge,
    Report,
    Reporter,
    ReportTable,
    Retriever,
    id_ranks,
    sort_hits,
    top_hits,
)

if TYPE_CHECKING:
    from recall_kit.curate.answer import answer_overlap
    from recall_kit.curate.text import content_words, word_overlap
    from recall_kit.dataset import SENSITIVE_IDS_FILE, Dataset, load_dataset, read_jsonl, sensitive_flag
    from recall_kit.fileio import atomic_batch, atomic_open, user_cache_folder
    from recall_kit.measure.systems.system import build_retriever
    from recall_kit.options import build_options
    from recall_kit.portable import GRID, fit_logistic, inner_products, on_grid, paired_inner_products, probabilities
    from recall_kit.progress import progress_bar, stage
    from recall_kit.registry import Registry


def __getattr__(name: str) -> Any:
    """The heavier names, imported on first use, so importing this module costs no numpy. Each
    import is written out (not a table of strings) so the layers contract sees it: this module is
    a facade on top of the host (pyproject.toml), and every import here runs downwards."""
    if name in ("atomic_batch", "atomic_open", "user_cache_folder"):
        import recall_kit.fileio as fileio
        return getattr(fileio, name)
    if name == "build_options":
        import recall_kit.options as options
        return getattr(options, name)
    if name in ("Dataset", "load_dataset", "read_jsonl", "SENSITIVE_IDS_FILE", "sensitive_flag"):
        import recall_kit.dataset as dataset
        return getattr(dataset, name)
    if name in ("progress_bar", "stage"):
        import recall_kit.progress as progress
        return getattr(progress, name)
    if name in ("GRID", "fit_logistic", "inner_products", "on_grid", "paired_inner_products", "probabilities"):
        import recall_kit.portable as portable
        return getattr(portable, name)
    if name == "Registry":
        import recall_kit.registry as registry
        return registry.Registry
    if name == "answer_overlap":
        from recall_kit.curate import answer
        return answer.answer_overlap
    if name in ("content_words", "word_overlap"):
        from recall_kit.curate import text
        return getattr(text, name)
    if name == "build_retriever":
        from recall_kit.measure.systems import system
        return system.build_retriever
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Corpus", "Dataset", "DatasetError", "EmbedsInBatches", "FailedSearch", "Fusion", "FusionRequest", "GeneratedQuery", "Hit", "Importer",
    "JudgedRankings", "JudgingContext", "Memory", "Metric", "NoOptions", "OptionError", "PairEvidence", "PluginRunError", "Qrels", "Query",
    "QueryGenerator", "RelevanceJudge", "RecallKitError", "Register", "Registry", "Report", "ReportTable", "Reporter",
    "Retriever", "SENSITIVE_IDS_FILE", "UnknownNameError", "atomic_batch", "atomic_open", "build_options", "build_retriever", "hookimpl", "lazy_attributes",
    "load_dataset", "progress_bar", "read_jsonl", "id_ranks", "sort_hits", "stage", "top_hits",
    "answer_overlap", "content_words", "user_cache_folder", "word_overlap", "mask_secrets", "debug_enabled", "sensitive_flag",
    "GRID", "fit_logistic", "inner_products", "on_grid", "paired_inner_products", "probabilities",
]
