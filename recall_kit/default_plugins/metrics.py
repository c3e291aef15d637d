"""The built-in metric families, registered through the same hook as any plugin's.

Aliases are the names users of trec_eval (``P_10``, ``ndcg_cut_10``, ``recip_rank``),
ir_measures (``P@10``, ``nDCG@10``, ``RR``) and ranx (``hit_rate@10``, ``ndcg_burges@10``) write;
each family's own name, in any case, works too.
"""

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
bpref = _on_first_use("bpref")
expected_reciprocal_rank = _on_first_use("expected_reciprocal_rank")
f1_at_k = _on_first_use("f1_at_k")
inferred_average_precision = _on_first_use("inferred_average_precision")
ndcg_exponential_at_k = _on_first_use("ndcg_exponential_at_k")
num_relevant = _on_first_use("num_relevant")
num_relevant_retrieved = _on_first_use("num_relevant_retrieved")
num_retrieved = _on_first_use("num_retrieved")

BUILTIN_METRICS: tuple[Metric, ...] = (
    Metric(
        name="recall",
        compute=recall_at_k,
        cutoff="required",
        description="Share of the relevant documents found in the top k (trec_eval recall_k).",
        default_cutoffs=(5, 10),
        aliases=("recall_{k}", "R@{k}"),
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
        aliases=("P_{k}", "P@{k}"),
    ),
    Metric(
        name="hit",
        compute=hit_at_k,
        cutoff="required",
        description="1 when any relevant document is in the top k (trec_eval success_k).",
        aliases=("success_{k}", "Success@{k}", "hit_rate@{k}"),
    ),
    Metric(
        name="f1",
        compute=f1_at_k,
        cutoff="optional",
        description="Harmonic mean of precision@k and recall@k; no cutoff: trec_eval set_F.",
        aliases=("set_F", "SetF", "F1@{k}"),
    ),
    Metric(
        name="ndcg",
        compute=ndcg_at_k,
        cutoff="optional",
        description="Graded nDCG, linear gain, log2 discount (trec_eval ndcg_cut_k; ndcg uncut).",
        default_cutoffs=(10,),
        aliases=("ndcg_cut_{k}", "nDCG", "nDCG@{k}"),
    ),
    Metric(
        name="ndcg_exp",
        compute=ndcg_exponential_at_k,
        cutoff="optional",
        description="Graded nDCG with exponential gain 2^grade - 1 (gdeval, Burges et al. 2005).",
        aliases=("nDCG(dcg='exp-log2')", "nDCG(dcg='exp-log2')@{k}", "ndcg_burges", "ndcg_burges@{k}"),
    ),
    Metric(
        name="err",
        compute=expected_reciprocal_rank,
        cutoff="required",
        description="Expected reciprocal rank, cascade model, max grade 4 (gdeval ERR@k).",
        aliases=("ERR@{k}",),
    ),
    Metric(
        name="mrr",
        compute=reciprocal_rank,
        cutoff="optional",
        description="Reciprocal rank of the first relevant document (trec_eval recip_rank).",
        default_cutoffs=(None,),
        aliases=("recip_rank", "RR", "RR@{k}"),
    ),
    Metric(
        name="map",
        compute=average_precision,
        cutoff="optional",
        description="Average precision, whole ranking or cut at k (trec_eval map, map_cut_k).",
        default_cutoffs=(None,),
        aliases=("map_cut_{k}", "AP", "AP@{k}"),
    ),
    Metric(
        name="r_precision",
        compute=r_precision,
        cutoff="none",
        description="Precision at rank R, R = number of relevant documents (trec_eval Rprec).",
        aliases=("Rprec", "r-precision"),
    ),
    Metric(
        name="bpref",
        compute=bpref,
        cutoff="none",
        description="Share of judged relevant ranked above judged non-relevant (trec_eval bpref).",
        aliases=("Bpref",),
    ),
    Metric(
        name="infap",
        compute=inferred_average_precision,
        cutoff="none",
        description="Inferred AP from a sampled pool; grade -1: pooled, unjudged (trec_eval infAP).",
        aliases=("infAP",),
    ),
    Metric(
        name="num_ret",
        compute=num_retrieved,
        cutoff="none",
        description="Documents retrieved; summed over queries (trec_eval num_ret).",
        aliases=("NumRet",),
        summary="sum",
    ),
    Metric(
        name="num_rel",
        compute=num_relevant,
        cutoff="none",
        description="Relevant documents in the qrels; summed over queries (trec_eval num_rel).",
        aliases=("NumRel",),
        summary="sum",
    ),
    Metric(
        name="num_rel_ret",
        compute=num_relevant_retrieved,
        cutoff="none",
        description="Relevant documents retrieved; summed over queries (trec_eval num_rel_ret).",
        aliases=("NumRelRet",),
        summary="sum",
    ),
    Metric(
        name="judged",
        compute=judged_at_k,
        cutoff="required",
        description="Share of the top k that has a judgment (grade >= 0): how far to trust the others.",
        default_cutoffs=(10,),
        aliases=("Judged@{k}",),
        diagnostic=True,
    ),
)


@hookimpl
def register_metrics(register: Register) -> None:
    """Register the built-in metric families (see `BUILTIN_METRICS`)."""
    for metric in BUILTIN_METRICS:
        register(metric.name, metric)
