"""The built-in metrics: one module per measure, named after the name users type.

Each module holds the measure's vectorised function over `JudgedRankings` (its docstring gives
the formula and a reference) and its `METRIC`: the registered name, cutoff rule, aliases,
bounds and description, as ir_measures' ``measures/ndcg.py`` keeps a measure in one file.
Aliases are the names users of trec_eval (``P_10``, ``ndcg_cut_10``, ``recip_rank``),
ir_measures (``P@10``, ``nDCG@10``, ``RR``) and ranx (``hit_rate@10``) write. numpy is imported
inside the functions, so that registering the metrics (``recall-kit plugins``) does not load it.
"""

from __future__ import annotations

from recall_kit.measure.score.metrics.bpref import bpref
from recall_kit.measure.score.metrics.err import expected_reciprocal_rank
from recall_kit.measure.score.metrics.f1 import f1_at_k
from recall_kit.measure.score.metrics.hit import hit_at_k
from recall_kit.measure.score.metrics.infap import inferred_average_precision
from recall_kit.measure.score.metrics.judged import judged_at_k
from recall_kit.measure.score.metrics.map import average_precision
from recall_kit.measure.score.metrics.mrr import reciprocal_rank
from recall_kit.measure.score.metrics.ndcg import ndcg_at_k
from recall_kit.measure.score.metrics.ndcg_exp import ndcg_exponential_at_k
from recall_kit.measure.score.metrics.num_rel import num_relevant
from recall_kit.measure.score.metrics.num_rel_ret import num_relevant_retrieved
from recall_kit.measure.score.metrics.num_ret import num_retrieved
from recall_kit.measure.score.metrics.precision import precision_at_k
from recall_kit.measure.score.metrics.r_precision import r_precision
from recall_kit.measure.score.metrics.recall import recall_at_k
from recall_kit.measure.score.metrics.recall_all import recall_all_at_k
from recall_kit.types import Metric


def builtin_metrics() -> tuple[Metric, ...]:
    """Every metric module's `METRIC`, in module-name order: what `default_plugins.metrics`
    registers. A module here without one is a mistake, and raises AttributeError naming it."""
    import importlib
    import pkgutil

    modules = sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))
    return tuple(importlib.import_module(f"{__name__}.{name}").METRIC for name in modules)


__all__ = [
    "average_precision",
    "bpref",
    "builtin_metrics",
    "expected_reciprocal_rank",
    "f1_at_k",
    "hit_at_k",
    "inferred_average_precision",
    "judged_at_k",
    "ndcg_at_k",
    "ndcg_exponential_at_k",
    "num_relevant",
    "num_relevant_retrieved",
    "num_retrieved",
    "precision_at_k",
    "r_precision",
    "recall_all_at_k",
    "recall_at_k",
    "reciprocal_rank",
]
