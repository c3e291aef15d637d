"""Running: the runner, its leg and fused runs, diagnostics, failures, the executor and its distributed tasks.

This front names what the layers above (decide/) may use; the modules behind it are the layout, not
the API (tests/test_architecture.py holds decide/ to it). Each name loads on first use, from the
module that defines it, so importing one module of this package does not load the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.lazy import lazy_attributes

if TYPE_CHECKING:
    from recall_kit.measure.run.diagnostics import merge_leg_warnings
    from recall_kit.measure.run.distribute import distinct_legs, leg_key, run_systems, score_systems, search_legs
    from recall_kit.measure.run.executor import Executor, LocalExecutor, RayExecutor, checkpoint_for, make_executor
    from recall_kit.measure.run.failures import (
        MaxFailed,
        failed_queries_warning,
        parse_max_failed,
        refuse_failed_results,
    )
    from recall_kit.measure.run.runner import run_benchmark, run_system, search_depth
    from recall_kit.measure.run.settings import ScoringSettings

_LAZY = {
    "merge_leg_warnings": "recall_kit.measure.run.diagnostics",
    "distinct_legs": "recall_kit.measure.run.distribute",
    "leg_key": "recall_kit.measure.run.distribute",
    "run_systems": "recall_kit.measure.run.distribute",
    "score_systems": "recall_kit.measure.run.distribute",
    "search_legs": "recall_kit.measure.run.distribute",
    "Executor": "recall_kit.measure.run.executor",
    "LocalExecutor": "recall_kit.measure.run.executor",
    "RayExecutor": "recall_kit.measure.run.executor",
    "checkpoint_for": "recall_kit.measure.run.executor",
    "make_executor": "recall_kit.measure.run.executor",
    "MaxFailed": "recall_kit.measure.run.failures",
    "failed_queries_warning": "recall_kit.measure.run.failures",
    "parse_max_failed": "recall_kit.measure.run.failures",
    "refuse_failed_results": "recall_kit.measure.run.failures",
    "run_benchmark": "recall_kit.measure.run.runner",
    "run_system": "recall_kit.measure.run.runner",
    "search_depth": "recall_kit.measure.run.runner",
    "ScoringSettings": "recall_kit.measure.run.settings",
}

__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    "Executor", "LocalExecutor", "MaxFailed", "RayExecutor", "ScoringSettings", "checkpoint_for",
    "distinct_legs", "failed_queries_warning", "leg_key", "make_executor", "parse_max_failed",
    "refuse_failed_results", "run_benchmark", "run_system", "run_systems", "score_systems", "search_depth",
    "search_legs", "merge_leg_warnings",
]
