"""Time recall-kit's scoring against pytrec_eval on a large synthetic run; fail if slower.

What is timed, on both sides, is what a user pays to score rankings already in memory:

* recall-kit: ``judge_rankings`` (join ranked ids with the qrels into arrays) + ``metric_values``
  for recall@10, ndcg@10, mrr, map and precision@5. Its input is the rankings as id lists, already
  in trec_eval order (the project-wide rule), and the qrels dict.
* pytrec_eval: ``RelevanceEvaluator(qrels, measures)`` + ``.evaluate(run)`` for recall_10,
  ndcg_cut_10, recip_rank, map and P_5. Its input is the run as ``{qid: {docid: score}}``; it
  sorts each query itself.

Building either input (the conversion) is not timed. Then both means are checked to agree to
1e-4, and the script exits 1 when recall-kit / pytrec_eval exceeds 1.0 (or they disagree).

    python benchmarks/bench_scoring.py [--queries 100000] [--depth 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time

import numpy as np

from recall_kit.measure.score.evaluation import judge_rankings, metric_values, resolve_metrics
from recall_kit.plugins import load_plugins
from recall_kit.types import Hit, sort_hits

METRICS = {  # recall-kit name -> pytrec_eval name
    "recall@10": "recall_10",
    "ndcg@10": "ndcg_cut_10",
    "mrr": "recip_rank",
    "map": "map",
    "precision@5": "P_5",
}
PYTREC_MEASURES = {"recall.10", "ndcg_cut.10", "recip_rank", "map", "P.5"}


def synthetic(num_queries: int, depth: int, seed: int):
    """A run of `depth` distinct documents per query, scores with ties, and graded qrels."""
    rng = np.random.default_rng(seed)
    num_docs = 1_000_000
    doc_ids = rng.choice(num_docs, size=(num_queries, depth + 10), replace=True)
    # Scores rounded to 1/64: many ties, so ordering by docno matters; exact in float32.
    scores = np.round(np.sort(rng.random((num_queries, depth)))[:, ::-1] * 64) / 64
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(num_queries):
        query_id = f"q{q}"
        ids = list(dict.fromkeys(f"d{d}" for d in doc_ids[q]))[:depth]
        run[query_id] = dict(zip(ids, scores[q, : len(ids)].tolist()))
        judged_in_run = rng.choice(len(ids), size=rng.integers(1, 8), replace=False)
        judged = [ids[i] for i in judged_in_run]
        judged += [f"d{d}" for d in rng.integers(0, num_docs, size=rng.integers(0, 6))]
        qrels[query_id] = {
            doc: int(grade) for doc, grade in zip(judged, rng.integers(0, 4, len(judged)))
        }
    return run, qrels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import pytrec_eval

    load_plugins()
    print(f"building {args.queries} queries x {args.depth} results (seed {args.seed}) ...")
    run, qrels = synthetic(args.queries, args.depth, args.seed)
    query_ids = sorted(run)
    # Conversion for recall-kit, not timed: rankings in trec_eval order as id lists.
    rankings = [
        [hit.id for hit in sort_hits([Hit(d, s) for d, s in run[q].items()])] for q in query_ids
    ]
    specs = resolve_metrics(list(METRICS))

    gc.collect()
    start = time.perf_counter()
    data = judge_rankings(query_ids, rankings, qrels)
    values = metric_values(data, specs)
    ours_seconds = time.perf_counter() - start

    gc.collect()
    start = time.perf_counter()
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES)
    expected = evaluator.evaluate(run)
    theirs_seconds = time.perf_counter() - start

    agree = True
    for name, trec_name in METRICS.items():
        ours = float(values[name].mean())
        theirs = float(np.mean([expected[q][trec_name] for q in query_ids]))
        ok = abs(ours - theirs) <= 1e-4
        agree &= ok
        print(
            f"  {name:12s} recall-kit {ours:.6f}  pytrec_eval {theirs:.6f}"
            f"  {'ok' if ok else 'DIFFER'}"
        )

    ratio = ours_seconds / theirs_seconds
    print(f"recall-kit  judge_rankings + metric_values:     {ours_seconds:8.3f} s")
    print(f"pytrec_eval RelevanceEvaluator(...) + evaluate: {theirs_seconds:8.3f} s")
    print(f"ratio recall-kit / pytrec_eval: {ratio:.3f}")
    if not agree:
        print("FAIL: the means disagree beyond 1e-4", file=sys.stderr)
        return 1
    if ratio > 1.0:
        print("FAIL: recall-kit is slower than pytrec_eval", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
