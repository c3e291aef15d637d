"""`[judging] sample = N`: a model judge grades N pairs, not the whole pool: a sample of the pairs
ordered by how far their label can move a decision delta (`recall_kit.decide.holes`), stratified
by the query's stratum, with a time estimate taken from the first calls and kept current.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recall_kit.study.pipeline.declare import Artefacts
    from recall_kit.study.steps.judgments import SampleReads
    from recall_kit.types import RelevanceJudge

#: Pairs judged before the first estimate, and per batch after it.
FIRST_CALLS = 5
BATCH = 25


def ordered_pairs(reads: SampleReads, artefacts: Artefacts) -> list[tuple[str, str]]:
    """The unjudged pairs in the order a person would be asked them: those that can move a decision
    row that can flip (heaviest first), then the rest of the pool in its order."""
    from recall_kit.curate.judge import read_pool
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.holes import Holes, boundable, decision_contrasts
    from recall_kit.measure.result import load_result

    dataset = load_dataset(artefacts.path("evaluation-set"))
    names = reads.systems
    results = {name: load_result(artefacts.path(f"run/{name}") / "result.json") for name in names}
    base = results[reads.baseline]
    contrasts = decision_contrasts(reads.baseline, [n for n in names if n != reads.baseline],
                                   boundable(reads.decision), base.query_ids, base.stratum_of())
    order: list[tuple[str, str]] = []
    if contrasts:
        holes = Holes({n: r.rankings() for n, r in results.items()}, dataset.qrels, contrasts,
                      n_resamples=reads.resamples, seed=reads.seed)
        order = [(q, d) for q, d, _ in holes.order()]
    seen = set(order)
    order += [(q, d) for q, docs in read_pool(artefacts.path("pool") / "pool.jsonl") for d in docs if (q, d) not in seen]
    return order


def stratified(pairs: Sequence[tuple[str, str]], stratum_of: dict[str, str], size: int) -> list[tuple[str, str]]:
    """`size` pairs of `pairs` (kept in their order), each stratum given its share of them (largest
    remainders), the first pairs of each stratum taken."""
    by: dict[str, list[tuple[str, str]]] = {}
    for pair in pairs:
        by.setdefault(stratum_of.get(pair[0], ""), []).append(pair)
    if size >= len(pairs):
        return list(pairs)
    quotas = {name: size * len(items) / len(pairs) for name, items in by.items()}
    taken = {name: int(quota) for name, quota in quotas.items()}
    for name in sorted(quotas, key=lambda n: (-(quotas[n] - taken[n]), n))[: size - sum(taken.values())]:
        taken[name] += 1
    chosen = {pair for name, items in by.items() for pair in items[: taken[name]]}
    return [pair for pair in pairs if pair in chosen]


def judge_sample(reads: SampleReads, artefacts: Artefacts, judge: RelevanceJudge, grades_path: Path, folder: Path,
                 context: Any = None) -> None:
    """Grade `[judging] sample` ordered pairs with `judge` (fitted on `context` when it learns), in
    batches; sample.json says how many, how long each took and how long the rest should take, after
    every batch."""
    from recall_kit.curate.judge import judge_with
    from recall_kit.dataset import load_dataset
    from recall_kit.fileio import write_json_atomic, write_jsonl_atomic
    from recall_kit.progress import stage

    evaluation = artefacts.path("evaluation-set")
    stratum_of = {q.query_id: q.stratum for q in load_dataset(evaluation).queries}
    sample = stratified(ordered_pairs(reads, artefacts), stratum_of, reads.size)
    pool_file = folder / "sample-pool.jsonl"
    done, started, estimate = 0, time.perf_counter(), None
    while done < len(sample):
        done = min(len(sample), done + (FIRST_CALLS if done == 0 else BATCH))
        rows: dict[str, list[str]] = {}
        for query, doc in sample[:done]:
            rows.setdefault(query, []).append(doc)
        write_jsonl_atomic(pool_file, [{"query_id": q, "doc_ids": docs} for q, docs in rows.items()])
        judge_with(judge, pool_file, evaluation, grades_path, show=lambda line: None, context=context)
        per_pair = (time.perf_counter() - started) / done
        estimate = per_pair * (len(sample) - done)
        stage(f"judging a sample: {done} of {len(sample)} pairs, about {estimate:.0f} s left")
        write_json_atomic(folder / "sample.json", {"sample": len(sample), "judged": done,
                                                  "seconds_per_pair": round(per_pair, 4),
                                                  "seconds_left": round(estimate, 1)})
