"""The built-in metric families, registered through the same hook as any plugin's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recall_kit.hookspecs import Register, hookimpl
from recall_kit.types import Metric


def _on_first_use(name: str) -> Callable[..., Any]:
    """recall_kit.measure.metrics.<name>, imported when first called: the metric modules load numpy,
    which `recall-kit --help` and other commands that score nothing should not pay for."""

    def compute(data: Any, cutoff: int | None) -> Any:
        from recall_kit.measure import metrics

        return getattr(metrics, name)(data, cutoff)

    compute.__name__ = compute.__qualname__ = name
    return compute


average_precision = _on_first_use("average_precision")
hit_at_k = _on_first_use("hit_at_k")
judged_at_k = _on_first_use("judged_at_k")
ndcg_at_k = _on_first_use("ndcg_at_k")
precision_at_k = _on_first_use("precision_at_k")
r_precision = _on_first_use("r_precision")
recall_all_at_k = _on_first_use("recall_all_at_k")
recall_at_k = _on_first_use("recall_at_k")
reciprocal_rank = _on_first_use("reciprocal_rank")

BUILTIN_METRICS: tuple[Metric, ...] = (
    Metric(
        name="recall",
        compute=recall_at_k,
        cutoff="required",
        description="Share of the relevant documents found in the top k (trec_eval recall_k).",
        default_cutoffs=(5, 10),
    ),
    Metric(
        name="recall_all",
        compute=recall_all_at_k,
        cutoff="required",
        description="1 when every relevant document is in the top k, else 0.",
    ),
    Metric(
        name="precision",
        compute=precision_at_k,
        cutoff="required",
        description="Share of the top k that is relevant (trec_eval P_k).",
    ),
    Metric(
        name="hit",
        compute=hit_at_k,
        cutoff="required",
        description="1 when any relevant document is in the top k (trec_eval success_k).",
    ),
    Metric(
        name="ndcg",
        compute=ndcg_at_k,
        cutoff="required",
        description="Graded nDCG at k, linear gain, log2 discount (trec_eval ndcg_cut_k).",
        default_cutoffs=(10,),
    ),
    Metric(
        name="mrr",
        compute=reciprocal_rank,
        cutoff="optional",
        description="Reciprocal rank of the first relevant document (trec_eval recip_rank).",
        default_cutoffs=(None,),
    ),
    Metric(
        name="map",
        compute=average_precision,
        cutoff="optional",
        description="Average precision, whole ranking or cut at k (trec_eval map, map_cut_k).",
        default_cutoffs=(None,),
    ),
    Metric(
        name="r_precision",
        compute=r_precision,
        cutoff="none",
        description="Precision at rank R, R = number of relevant documents (trec_eval Rprec).",
    ),
    Metric(
        name="judged",
        compute=judged_at_k,
        cutoff="required",
        description="Share of the top k that has any judgment: how far to trust the others.",
        default_cutoffs=(10,),
        diagnostic=True,
    ),
)


@hookimpl
def register_metrics(register: Register) -> None:
    """Register recall, recall_all, precision, hit, ndcg, mrr, map, r_precision and judged."""
    for metric in BUILTIN_METRICS:
        register(metric.name, metric)
