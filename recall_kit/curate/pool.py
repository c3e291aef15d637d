"""Judgment pooling: the unjudged ids in the union of several systems' top-depth rankings, per query,
so that a person can judge them and close the holes that make a new system look worse than it is."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.dataset import Dataset, load_dataset
from recall_kit.errors import OptionError, ResultFileError
from recall_kit.fileio import write_jsonl_atomic
from recall_kit.measure.comparable import check_comparable
from recall_kit.measure.result import BenchmarkResult, load_results
from recall_kit.types import Report, ReportTable


@dataclass
class Pool:
    depth: int
    labels: list[str]
    rows: list[dict[str, Any]]
    #: Per system: ids in its top depth, and how many of them are unjudged.
    counts: dict[str, dict[str, int]]
    warnings: list[str] = field(default_factory=list)

    def report(self) -> Report:
        rows = []
        for label in self.labels:
            counts = self.counts[label]
            share = counts["unjudged"] / counts["returned"] if counts["returned"] else 0.0
            rows.append([label, counts["returned"], counts["unjudged"], f"{share:.1%}"])
        total = sum(len(row["doc_ids"]) for row in self.rows)
        table = ReportTable(
            title=f"Unjudged ids in the top {self.depth}",
            headers=["system", f"ids in top {self.depth}", "unjudged", "unjudged share"],
            rows=rows,
            notes=[f"pool: {total} unjudged ids over {len(self.rows)} queries (union of the systems)"],
        )
        return Report(title="recall-kit pool", tables=[table], notes=self.warnings,
                      data={"depth": self.depth, "systems": self.labels, "counts": self.counts,
                            "queries": len(self.rows), "ids": total})


def pool_unjudged(
    named: Sequence[tuple[str, BenchmarkResult]],
    dataset: Dataset,
    depth: int = 10,
    with_text: bool = False,
    files: Sequence[str | Path] | None = None,
) -> Pool:
    """Per query, the ids some system ranked in its top `depth` that the qrels do not judge.

    Ids are ordered by their best rank in any system, then by how many systems returned them.
    Ids outside the corpus (a live system's own memories) are offered too, listed again under
    `outside_corpus` (and `sensitive` for those the dataset marks sensitive; their text is never
    written). Memory and query text are added only with `with_text`. `files`, the results'
    files in order, are what a mistake names (the user gave files, not system names).
    """
    _check_poolable(named, dataset, depth, files)
    warnings = []
    for label, result in named:
        if result.k < depth:
            warnings.append(f"{label!r} was scored at k={result.k} < --depth {depth}: its pool stops at k.")
    texts = {query.query_id: query.text for query in dataset.queries}
    counts = {label: {"returned": 0, "unjudged": 0} for label, _ in named}
    rankings = {label: result.rankings() for label, result in named}
    rows = []
    for query_id in named[0][1].query_ids:
        judged = dataset.qrels.get(query_id, {})
        best_rank: dict[str, int] = {}
        systems: dict[str, list[str]] = {}
        for label, _ in named:
            for rank, doc in enumerate(rankings[label][query_id][:depth], start=1):
                counts[label]["returned"] += 1
                if doc in judged:
                    continue
                counts[label]["unjudged"] += 1
                best_rank[doc] = min(best_rank.get(doc, rank), rank)
                systems.setdefault(doc, []).append(label)
        if best_rank:
            rows.append(_pool_row(query_id, best_rank, systems, dataset, texts.get(query_id) if with_text else None,
                                  with_text))
    return Pool(depth=depth, labels=[label for label, _ in named], rows=rows, counts=counts, warnings=warnings)


def _check_poolable(named: Sequence[tuple[str, BenchmarkResult]], dataset: Dataset, depth: int,
                    files: Sequence[str | Path] | None) -> None:
    """Refuse, in one line, a depth below 1, results of different datasets or query sets, results of
    another version of `dataset`, an empty result and queries `dataset` does not hold."""
    def where(index: int) -> str:
        return f"{files[index]}" if files else f"The result {named[index][0]!r}"

    if depth < 1:
        raise OptionError(f"--depth must be at least 1, got {depth}.")
    if len(named) > 1:
        check_comparable(named)
    fingerprint = named[0][1].fingerprint
    if fingerprint != dataset.fingerprint:
        raise ResultFileError(
            f"{files[0] if files else 'The results'}: run on a different version of {dataset.name!r} (fingerprint "
            f"{str(fingerprint)[:12]}, the dataset is now {dataset.fingerprint[:12]}); re-run eval first."
        )
    empty = [index for index, (_, result) in enumerate(named) if not result.query_ids]
    if empty:  # an empty pool written with exit 0 reads as "nothing left to judge"
        raise ResultFileError(f"{where(empty[0])} holds no queries: nothing to pool (re-run eval).")
    known = {query.query_id for query in dataset.queries}
    missing = [query_id for query_id in named[0][1].query_ids if query_id not in known]
    if missing:  # an empty pool written with exit 0 reads as "nothing left to judge"
        raise ResultFileError(
            f"{where(0)}: {len(missing)} of its {len(named[0][1].query_ids)} queries (first: {missing[0]!r}) "
            f"are not queries of {dataset.name!r}; pool the results of this dataset."
        )


def _pool_row(query_id: str, best_rank: dict[str, int], systems: dict[str, list[str]], dataset: Dataset,
              query_text: str | None, with_text: bool) -> dict[str, Any]:
    """One query's pooled ids (by best rank, then by how many systems returned them) and the systems
    that returned each; ids outside the corpus and sensitive ones marked; texts with `with_text`."""
    ids = sorted(best_rank, key=lambda doc: (best_rank[doc], -len(systems[doc]), doc))
    row: dict[str, Any] = {"query_id": query_id, "doc_ids": ids, "systems": {doc: systems[doc] for doc in ids}}
    # A live system's own memories: offered like any unjudged id (judged by id; the text is not
    # in the dataset), and the sensitive ones marked so that a judge knows what they are.
    outside = [doc for doc in ids if doc not in dataset.corpus]
    if outside:
        row["outside_corpus"] = outside
        sensitive = [doc for doc in outside if doc in dataset.sensitive_ids]
        if sensitive:
            row["sensitive"] = sensitive
    if with_text:
        row["query_text"] = query_text
        row["texts"] = {doc: memory.content if (memory := dataset.corpus.get(doc)) else None for doc in ids}
    return row


def pool_files(
    paths: Sequence[str | Path],
    out: str | Path,
    depth: int = 10,
    dataset_path: str | Path | None = None,
    with_text: bool = False,
) -> Pool:
    """`recall-kit pool`: read result files, pool their unjudged ids, write them as JSONL.

    The qrels come from `dataset_path`, else from the dataset path recorded in the first result.
    """
    if with_text and dataset_path is None:
        raise OptionError("--with-text needs --dataset DIR (text is added only on explicit request).")
    named = load_results(paths)
    path = dataset_path or named[0][1].dataset.path
    if not path:
        raise OptionError("The result records no dataset path: pass --dataset DIR.")
    pool = pool_unjudged(named, load_dataset(path), depth=depth, with_text=with_text, files=list(paths))
    write_jsonl_atomic(out, pool.rows)
    return pool
