"""Dataset export to standard formats: TREC (topics, qrels, corpus) and BEIR (corpus, queries, qrels)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from recall_kit.curate.importers._writer import one_line
from recall_kit.dataset import Dataset
from recall_kit.errors import DatasetError
from recall_kit.fileio import atomic_open, write_jsonl_atomic
from recall_kit.measure.trec import check_token

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
    (`{"id", "contents"}`, Pyserini's JsonCollection). beir: `corpus.jsonl` (`_id`, `title`,
    `text`), `queries.jsonl` (`_id`, `text`) and `qrels/<split>.tsv` with its header. Neither
    format holds scopes, strata or memory fields beyond the text: the counts say how many were
    left behind.
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
            from recall_kit.measure.trec import write_qrels

            with atomic_open(folder / "topics.tsv") as stream:
                for query in dataset.queries:
                    stream.write(f"{query.query_id}\t{one_line(query.text)}\n")
            write_qrels(folder / "qrels.txt", qrels)
            write_jsonl_atomic(folder / "corpus.jsonl",
                               ({"id": memory.id, "contents": memory.content} for memory in dataset.corpus))
        else:
            (folder / "qrels").mkdir()
            write_jsonl_atomic(folder / "corpus.jsonl", (
                {"_id": memory.id, "title": "", "text": memory.content} for memory in dataset.corpus))
            write_jsonl_atomic(folder / "queries.jsonl", (
                {"_id": query.query_id, "text": query.text} for query in dataset.queries))
            with atomic_open(folder / "qrels" / f"{split}.tsv") as stream:
                stream.write("query-id\tcorpus-id\tscore\n")
                for query_id, judged in qrels.items():
                    for doc_id, grade in judged.items():
                        stream.write(f"{query_id}\t{doc_id}\t{int(grade)}\n")
    return {
        "format": format_name,
        "documents": len(dataset.corpus),
        "queries": len(dataset.queries),
        "judgments": sum(len(judged) for judged in qrels.values()),
        "not_representable": {
            "query_scopes": sum(1 for query in dataset.queries if query.scope is not None),
            "strata": len(dataset.strata) if dataset.strata != ["all"] else 0,
            "parent_links": sum(1 for memory in dataset.corpus if memory.parent_id is not None),
        },
    }
