"""The dense leg on ONNX Runtime (fp32 export) against torch: the same top 10 for every query?

    python benchmarks/bench_dense_onnx_rankings.py [--models all-MiniLM-L6-v2,all-mpnet-base-v2]
        [--locomo ../shared/data/locomo-dev.json] [--conversations 5] [--first 0] [--no-example]

For each model and each dataset (examples/memories; with --locomo, the LoCoMo conversations
imported as `study` imports them, one scope per conversation): every scope's memories embedded by
both backends (no embedding cache), every query searched by both, and compared: the number of
queries whose top 10 (ids, in order) differ; of those, how many differ by more than near-ties
(memories whose scores are within 1e-5, relative, of each other swapped: float32 sums taken in
another order; `recall_kit.testing.check_top_k_of`, both ways); and the largest difference
between the two backends' scores of the same memory for the same query. The ONNX exports are kept in a temporary
RECALL_KIT_CACHE (made on the first run). Nothing of the conversations' text is printed or kept.

Bars (exit 1 when missed): no query's top 10 differs by more than a near-tie.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MISSED: list[str] = []


def bar(name: str, value: float, target: str, ok: bool) -> None:
    """One machine-readable line that run_all.py summarises."""
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def locomo(path: Path, count: int, folder: Path, first: int = 0) -> Any:
    """`count` conversations of a LoCoMo file from the `first`'th (0: the first), imported and loaded."""
    from recall_kit import import_dataset, load_dataset

    subset = folder / "locomo.json"
    subset.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8"))[first:first + count]), encoding="utf-8")
    import_dataset("locomo", subset, folder / "dataset")
    return load_dataset(folder / "dataset")


def near_ties_only(onnx_hits: list[Any], torch_hits: list[Any]) -> bool:
    """Whether each backend's top 10 is a top 10 of the other's ranking, near-ties in either order."""
    from recall_kit.testing import check_top_k_of

    try:
        check_top_k_of(onnx_hits[:10], torch_hits, 10, rel_tol=1e-5)
        check_top_k_of(torch_hits[:10], onnx_hits, 10, rel_tol=1e-5)
    except AssertionError:
        return False
    return True


def compare(model: str, dataset: Any) -> dict[str, Any]:
    """Both backends over every scope of `dataset`: differing top 10s and the largest score gap."""
    from recall_kit_dense.retriever import DenseRetriever

    from recall_kit.measure.run.runner import corpus_for, scope_groups

    differ = real = queries = 0
    largest = 0.0
    seconds = {"onnx": 0.0, "torch": 0.0}
    for scope, indexes in scope_groups(dataset).items():
        texts = [dataset.queries[i].text for i in indexes]
        hits = {}
        for backend in ("onnx", "torch"):
            started = time.perf_counter()
            retriever = DenseRetriever(DenseRetriever.Options(model=model, backend=backend, cache=False))
            retriever.build_index(corpus_for(dataset.corpus, scope))
            hits[backend] = retriever.search_many(texts, 20)
            seconds[backend] += time.perf_counter() - started
            assert retriever.index_stats()["backend"] == backend, f"{model} did not run on {backend}"
        for onnx_hits, torch_hits in zip(hits["onnx"], hits["torch"], strict=True):
            queries += 1
            if [hit.id for hit in onnx_hits[:10]] != [hit.id for hit in torch_hits[:10]]:
                differ += 1
                real += not near_ties_only(onnx_hits, torch_hits)
            torch_scores = {hit.id: hit.score for hit in torch_hits}
            largest = max([largest, *(abs(hit.score - torch_scores[hit.id]) for hit in onnx_hits
                                      if hit.id in torch_scores)])
    return {"queries": queries, "top10_differ": differ, "top10_differ_beyond_near_ties": real,
            "max_score_difference": largest,
            "embed_and_search_s": {name: round(value, 1) for name, value in seconds.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="all-MiniLM-L6-v2,all-mpnet-base-v2")
    parser.add_argument("--locomo", type=Path, help="a LoCoMo JSON file (locomo10.json's format)")
    parser.add_argument("--conversations", type=int, default=5)
    parser.add_argument("--first", type=int, default=0, help="skip this many conversations first")
    parser.add_argument("--no-example", action="store_true", help="LoCoMo only, not examples/memories")
    parser.add_argument("--quick", action="store_true", help="MiniLM on examples/memories only")
    args = parser.parse_args()
    from recall_kit import load_dataset

    os.environ.setdefault("RECALL_KIT_CACHE", str(Path(tempfile.gettempdir()) / "recall-kit-bench-onnx-rankings"))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs, load average {load:.2f}; exports under {os.environ['RECALL_KIT_CACHE']}")
    models = ["all-MiniLM-L6-v2"] if args.quick else args.models.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-onnx-rankings-") as folder:
        datasets = {} if args.no_example else {"examples/memories": load_dataset(ROOT / "examples" / "memories")}
        if args.locomo is not None and not args.quick:
            datasets[f"LoCoMo (conversations {args.first + 1}-{args.first + args.conversations})"] = locomo(
                args.locomo, args.conversations, Path(folder), args.first)
        for model in models:
            for name, dataset in datasets.items():
                row = compare(model.strip(), dataset)
                print(f"{model} on {name}: " + json.dumps(row), flush=True)
                bar(f"queries whose top 10 differ beyond near-ties, {model}, {name}",
                    row["top10_differ_beyond_near_ties"], "== 0", row["top10_differ_beyond_near_ties"] == 0)
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
