"""The built-in metrics: one module per family, each a vectorised function over JudgedRankings."""

from __future__ import annotations

from recall_kit.measure.metrics.average_precision import average_precision
from recall_kit.measure.metrics.hit import hit_at_k
from recall_kit.measure.metrics.judged import judged_at_k
from recall_kit.measure.metrics.ndcg import ndcg_at_k
from recall_kit.measure.metrics.precision import precision_at_k
from recall_kit.measure.metrics.r_precision import r_precision
from recall_kit.measure.metrics.recall import recall_at_k
from recall_kit.measure.metrics.recall_all import recall_all_at_k
from recall_kit.measure.metrics.reciprocal_rank import reciprocal_rank

__all__ = [
    "average_precision",
    "hit_at_k",
    "judged_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "r_precision",
    "recall_all_at_k",
    "recall_at_k",
    "reciprocal_rank",
]
