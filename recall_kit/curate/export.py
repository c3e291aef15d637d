"""Dataset export to standard formats: TREC (topics, qrels, corpus) and BEIR (corpus, queries, qrels)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from recall_kit.curate.importers._writer import one_line
from recall_kit.dataset import Dataset
from recall_kit.errors import DatasetError
from recall_kit.fileio import atomic_open, write_jsonl_atomic
from recall_kit.measure.score.trec import check_token
from recall_kit.types import Memory, Query

EXPORT_FORMATS = ("trec", "beir")


def export_dataset(
    dataset: Dataset,
    destination: str | Path,
    format_name: Literal["trec", "beir"] | str,
    split: str = "test",
    force: bool = False,
) -> dict[str, Any]:
    """Write `dataset` to the folder `destination` in `format_name`, atomically; return counts.

    trec: `topics.tsv` (qid<TAB>text), `qrels.txt` (qid 0 docid grade) and `corpus.jsonl`
    (`{"id", "contents"}`, Pyserini's JsonCollection), which hold no field beyond the text. beir:
    `corpus.jsonl` (`_id`, `title`, `text`, and a `metadata` object with the memory's other
    fields: category, tags, expanded_keywords, importance, created_at, scope, parent_id),
    `queries.jsonl` (`_id`, `text`, `metadata` with stratum and scope) and `qrels/<split>.tsv`
    with its header; the beir importer reads the metadata back. `not_representable` counts,
    per field, the rows whose value the format could not carry.
    """
    from recall_kit.curate.importers._writer import atomic_folder

    if format_name not in EXPORT_FORMATS:
        raise DatasetError(f"Unknown export format {format_name!r}. Available: {', '.join(EXPORT_FORMATS)}.")
    for query in dataset.queries:
        check_token("query id", query.query_id)
    for judged in dataset.qrels.values():
        for doc_id in judged:
            check_token("document id", doc_id)
    for memory in dataset.corpus:
        check_token("document id", memory.id)
    qrels = {query.query_id: dataset.qrels.get(query.query_id, {}) for query in dataset.queries}
    with atomic_folder(destination, force=force, inputs=[dataset.path]) as folder:
        if format_name == "trec":
            from recall_kit.measure.score.trec import write_qrels

            with atomic_open(folder / "topics.tsv") as stream:
                for query in dataset.queries:
                    stream.write(f"{query.query_id}\t{one_line(query.text)}\n")
            write_qrels(folder / "qrels.txt", qrels)
            write_jsonl_atomic(folder / "corpus.jsonl",
                               ({"id": memory.id, "contents": memory.content} for memory in dataset.corpus))
        else:
            (folder / "qrels").mkdir()
            write_jsonl_atomic(folder / "corpus.jsonl", (
                _with_metadata({"_id": memory.id, "title": "", "text": memory.content}, memory_fields(memory))
                for memory in dataset.corpus))
            write_jsonl_atomic(folder / "queries.jsonl", (
                _with_metadata({"_id": query.query_id, "text": query.text}, query_fields(query))
                for query in dataset.queries))
            with atomic_open(folder / "qrels" / f"{split}.tsv") as stream:
                stream.write("query-id\tcorpus-id\tscore\n")
                for query_id, judged in qrels.items():
                    for doc_id, grade in judged.items():
                        stream.write(f"{query_id}\t{doc_id}\t{int(grade)}\n")
    lost: dict[str, int] = {}
    if format_name == "trec":
        for fields in map(memory_fields, dataset.corpus):
            for name in fields:
                lost[f"memory_{name}"] = lost.get(f"memory_{name}", 0) + 1
        for query in dataset.queries:
            for name in query_fields(query):
                lost[f"query_{name}"] = lost.get(f"query_{name}", 0) + 1
    return {
        "format": format_name,
        "documents": len(dataset.corpus),
        "queries": len(dataset.queries),
        "judgments": sum(len(judged) for judged in qrels.values()),
        "not_representable": lost,
    }


def memory_fields(memory: Memory) -> dict[str, Any]:
    """A memory's fields beyond its id and text that are set, as a BEIR `metadata` object holds them."""
    fields: dict[str, Any] = {"category": memory.category, "tags": list(memory.tags),
                              "expanded_keywords": memory.expanded_keywords, "importance": memory.importance,
                              "created_at": memory.created_at, "scope": memory.scope, "parent_id": memory.parent_id}
    return {name: value for name, value in fields.items() if value not in (None, "", [])}


def query_fields(query: Query) -> dict[str, Any]:
    """A query's stratum (when not the default "all") and scope, as a BEIR `metadata` object holds them."""
    fields: dict[str, Any] = {"stratum": query.stratum if query.stratum != "all" else None, "scope": query.scope}
    return {name: value for name, value in fields.items() if value is not None}


def _with_metadata(row: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    return {**row, "metadata": metadata} if metadata else row
