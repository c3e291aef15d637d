"""How many dense top-10 rankings and combined-judge grades change under a proxy for another CPU,
before and after the grid (issue 67; docs/study.md, "Which numbers reproduce where"):

    python benchmarks/bench_portability.py [--locomo ../shared/data/locomo-dev.json]

For each data set (the example store; LoCoMo dev, adversarial questions aside, when given) and
each proxy of `portability_proxies.py` (torch for ONNX Runtime, ONNX Runtime unoptimised, one
thread, OpenBLAS's Haswell kernels, the last bit of every embedding flipped), a worker process
under that proxy embeds the memories and the queries with the dense leg's model and writes:

- the top 10 of every query **before** (float32 scores as BLAS sums them, ties at float32 by id:
  the ranking recall-kit made until this change) and **after** (`recall_kit_dense.ann.portable_top_k`:
  rescored in float64 on the grid, ties by id);
- the combined judge's grade of every pair of the pool (every query's fts5 top 10 and its
  qrels pairs), fitted on the qrels taken as complete over the pool, cross-fitted (as a study
  fits it), **before** (scikit-learn's lbfgs at its default
  tolerance, float32 similarities, raw probabilities) and **after** (the judge as it is now).

It prints, per proxy, how many rankings and grades differ from the default's. Bar (exit 1 when
missed): 0 after, on every data set and proxy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from portability_proxies import PROXIES, apply, environment  # noqa: E402


def _old_ways() -> dict[str, object]:
    """The judge's three portable functions as they were before the grid."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return {
        "fit_logistic": lambda rows, truth: make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(rows, truth),
        "probabilities": lambda model, rows: model.predict_proba(rows)[:, 1],
        "paired_inner_products": lambda left, right: np.array([float(np.dot(a, b)) for a, b in zip(left, right, strict=True)]),
    }


def worker(proxy: str, dataset_path: str, out: str, judged_queries: str = "0") -> None:
    """Under `proxy`: the rankings and grades, before and after, as JSON in `out`; the judge
    grades the pools of the first `judged_queries` queries (0: all)."""
    apply(proxy)
    from recall_kit_dense import judges
    from recall_kit_dense.ann import portable_top_k
    from recall_kit_dense.retriever import DenseRetriever

    from recall_kit import load_dataset
    from recall_kit.plugin import JudgingContext, build_retriever, id_ranks, top_hits

    dataset = load_dataset(dataset_path)
    corpus = dataset.corpus
    ids = [memory.id for memory in corpus]
    queries = [query for query in dataset.queries if query.text.strip()]
    dense = DenseRetriever()
    dense.build_index(corpus)
    matrix = dense.embeddings
    vectors = dense._embed_queries([query.text for query in queries])
    scores = vectors @ matrix.T  # float32, as BLAS sums it under this proxy
    rank = id_ranks(ids)
    before = {q.query_id: [hit.id for hit in top_hits(row, ids, 10, rank)] for q, row in zip(queries, scores, strict=True)}
    after = {q.query_id: [hit.id for hit in hits]
             for q, hits in zip(queries, portable_top_k(matrix, vectors, scores, ids, 10, rank), strict=True)}

    fts5 = build_retriever("fts5")
    fts5.build_index(corpus)
    pool = {q.query_id: dict.fromkeys([*(hit.id for hit in fts5.search(q.text, 10)), *dataset.qrels.get(q.query_id, {})])
            for q in queries}
    by_id = {memory.id: memory for memory in corpus}
    judged = queries[:int(judged_queries)] if int(judged_queries) > 0 else queries
    # As a study fits it: the qrels taken as complete over the pool (a pooled id they do not list: 0)
    labels = {q.query_id: {doc: int(dataset.qrels.get(q.query_id, {}).get(doc, 0)) for doc in pool[q.query_id]}
              for q in judged}
    context = JudgingContext(labels=labels, queries={q.query_id: q for q in queries}, corpus=by_id, seed=0)
    pairs = [(q, by_id[doc]) for q in judged for doc in pool[q.query_id] if doc in by_id]
    keys = [f"{q.query_id}\t{m.id}" for q, m in pairs]
    grades = {}
    for when in ("after", "before"):
        if when == "before":
            for name, function in _old_ways().items():
                setattr(judges, name, function)
        judge = judges.CombinedJudge()
        judge.prepare()
        judge.fit(context)
        grades[when] = dict(zip(keys, judge.grade_many(pairs), strict=True))
    Path(out).write_text(json.dumps({"rankings": {"before": before, "after": after}, "grades": grades}), encoding="utf-8")


def run_worker(proxy: str, dataset: Path, work: Path, judged: int) -> dict[str, dict[str, dict[str, object]]]:
    out = work / f"{dataset.name}-{proxy}.json"
    env = {**os.environ, **environment(proxy), "RECALL_KIT_CACHE": str(work / f"cache-{dataset.name}-{proxy}")}
    done = subprocess.run([sys.executable, __file__, "--worker", proxy, str(dataset), str(out), str(judged)], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"worker {proxy} on {dataset.name} failed ({done.returncode})")
    return json.loads(out.read_text(encoding="utf-8"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", help="LoCoMo JSON file (its dev part)")
    parser.add_argument("--locomo-judged", type=int, default=150, metavar="N",
                        help="LoCoMo questions whose pools the judge learns from and grades under each proxy (0: all; "
                             "the relevance signal costs ~30 s per 1,000 pairs on 2 cores)")
    parser.add_argument("--worker", nargs=4, metavar=("PROXY", "DATASET", "OUT", "JUDGED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return 0
    changed_after = 0
    with tempfile.TemporaryDirectory(prefix="bench-portability-") as temporary:
        work = Path(temporary)
        datasets = [ROOT / "examples" / "memories"]
        if args.locomo and os.path.isfile(args.locomo):
            subprocess.run([sys.executable, "-m", "recall_kit", "dataset", "import", "locomo", args.locomo,
                            str(work / "locomo"), "--adversarial", "false"], check=True, capture_output=True)
            datasets.append(work / "locomo")
        else:
            print("no LoCoMo file given (--locomo PATH): the example store only")
        for dataset in datasets:
            judged = args.locomo_judged if dataset.name == "locomo" else 0
            found = {proxy: run_worker(proxy, dataset, work, judged) for proxy in PROXIES}
            default = found["default"]
            queries = len(default["rankings"]["after"])
            pairs = len(default["grades"]["after"])
            print(f"\n{dataset.name}: {queries} queries' top 10, {pairs} judged pairs"
                  + (f" (the pools of its first {judged} queries)" if judged else ""))
            print("| proxy | rankings changed before | after | grades changed before | after |")
            print("| --- | ---: | ---: | ---: | ---: |")
            for proxy in PROXIES[1:]:
                counts = []
                for when in ("before", "after"):
                    rankings = sum(found[proxy]["rankings"][when][q] != ranking for q, ranking in default["rankings"][when].items())
                    grades = sum(found[proxy]["grades"][when][key] != grade for key, grade in default["grades"][when].items())
                    counts.append((rankings, grades))
                    changed_after += (rankings + grades) if when == "after" else 0
                print(f"| {proxy} | {counts[0][0]} | {counts[1][0]} | {counts[0][1]} | {counts[1][1]} |")
    print(f"\nBAR rankings and grades changed after the grid, every proxy: {changed_after} (target 0) "
          f"{'FAIL' if changed_after else 'PASS'}")
    return 1 if changed_after else 0


if __name__ == "__main__":
    raise SystemExit(main())
