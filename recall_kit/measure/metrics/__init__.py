"""The built-in metrics: one module per measure, each a vectorised function over JudgedRankings."""

from __future__ import annotations

from recall_kit.measure.metrics.average_precision import average_precision
from recall_kit.measure.metrics.bpref import bpref
from recall_kit.measure.metrics.err import expected_reciprocal_rank
from recall_kit.measure.metrics.f1 import f1_at_k
from recall_kit.measure.metrics.hit import hit_at_k
from recall_kit.measure.metrics.infap import inferred_average_precision
from recall_kit.measure.metrics.judged import judged_at_k
from recall_kit.measure.metrics.ndcg import ndcg_at_k
from recall_kit.measure.metrics.ndcg_exp import ndcg_exponential_at_k
from recall_kit.measure.metrics.num_rel import num_relevant
from recall_kit.measure.metrics.num_rel_ret import num_relevant_retrieved
from recall_kit.measure.metrics.num_ret import num_retrieved
from recall_kit.measure.metrics.precision import precision_at_k
from recall_kit.measure.metrics.r_precision import r_precision
from recall_kit.measure.metrics.recall import recall_at_k
from recall_kit.measure.metrics.recall_all import recall_all_at_k
from recall_kit.measure.metrics.reciprocal_rank import reciprocal_rank

__all__ = [
    "average_precision",
    "bpref",
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
