"""The declared plugin API: everything a plugin outside this package may import from recall-kit.

A plugin imports from ``recall_kit.plugin`` (or the same names from ``recall_kit``) and from
``recall_kit.testing`` in its tests, and from nowhere deeper: an import-linter contract in
``pyproject.toml`` holds every package under ``plugins/`` and ``examples/`` to it. Names here are
stable; anything else in recall-kit may move between releases.

Every name is cheap to import (no numpy): the heavier ones load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    Memory,
    Metric,
    NoOptions,
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
    from recall_kit.curate.text import content_words, word_overlap
    from recall_kit.dataset import Dataset, load_dataset, read_jsonl
    from recall_kit.fileio import atomic_batch, atomic_open, user_cache_folder
    from recall_kit.options import build_options
    from recall_kit.progress import progress_bar, stage
    from recall_kit.registry import Registry

_LAZY = {
    "atomic_batch": "recall_kit.fileio",
    "atomic_open": "recall_kit.fileio",
    "user_cache_folder": "recall_kit.fileio",
    "build_options": "recall_kit.options",
    "Dataset": "recall_kit.dataset",
    "load_dataset": "recall_kit.dataset",
    "read_jsonl": "recall_kit.dataset",
    "progress_bar": "recall_kit.progress",
    "stage": "recall_kit.progress",
    "Registry": "recall_kit.registry",
    "word_overlap": "recall_kit.curate.text",
    "content_words": "recall_kit.curate.text",
}

__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    "Corpus", "Dataset", "DatasetError", "EmbedsInBatches", "FailedSearch", "Fusion", "FusionRequest", "GeneratedQuery", "Hit", "Importer",
    "JudgedRankings", "Memory", "Metric", "NoOptions", "OptionError", "PluginRunError", "Qrels", "Query",
    "QueryGenerator", "RelevanceJudge", "RecallKitError", "Register", "Registry", "Report", "ReportTable", "Reporter",
    "Retriever", "UnknownNameError", "atomic_batch", "atomic_open", "build_options", "hookimpl", "lazy_attributes",
    "load_dataset", "progress_bar", "read_jsonl", "id_ranks", "sort_hits", "stage", "top_hits",
    "content_words", "user_cache_folder", "word_overlap", "mask_secrets", "debug_enabled",
]
