"""Importer for a BEIR folder: corpus.jsonl, queries.jsonl and qrels/<split>.tsv."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall_kit.curate.importers._writer import Counts, as_id, qrels_row, write_dataset_files
from recall_kit.dataset import read_jsonl
from recall_kit.errors import DatasetError
from recall_kit.types import Importer


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


#: The `metadata` keys recall-kit's BEIR export writes (a memory's fields beyond its text; a query's
#: stratum and scope), each with the check its value must pass to be kept. Any other key (BEIR's
#: own datasets carry url, pubmed_id, ...) is not a recall-kit field and is left alone.
_MEMORY_METADATA = {
    "category": _text, "expanded_keywords": _text, "created_at": _text, "scope": _text,
    "tags": lambda value: isinstance(value, list) and all(_text(tag) for tag in value),
    "importance": _number,
    "parent_id": lambda value: _text(value) or (isinstance(value, int) and not isinstance(value, bool)),
}
_QUERY_METADATA = {"stratum": _text, "scope": _text}


def _known_metadata(row: dict[str, Any], known: dict[str, Any], counts: Counts) -> dict[str, Any]:
    """The recall-kit fields of a row's `metadata` object; a known key of the wrong type is counted
    (metadata_values_ignored) and left out."""
    metadata = row.get("metadata")
    if not isinstance(metadata, dict):
        return {}
    kept = {}
    for name, check in known.items():
        if name in metadata and metadata[name] is not None:
            if check(metadata[name]):
                kept[name] = metadata[name]
            else:
                counts.drop("metadata_values_ignored")
    return kept


class BeirImporter(Importer):
    """A BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)."""

    description = "BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv (graded qrels kept)"

    @dataclass(frozen=True)
    class Options:
        #: Which qrels file to read: qrels/<split>.tsv.
        split: str = "test"
        #: Join each document's title before its text (as BEIR's own retrievers do).
        title: bool = True

    def run(self, source: Path, destination: Path) -> dict[str, Any]:
        counts = Counts()
        qrels_path = source / "qrels" / f"{self.options.split}.tsv"
        if not qrels_path.is_file():
            available = sorted(p.stem for p in (source / "qrels").glob("*.tsv"))
            raise DatasetError(
                f"{qrels_path}: not found (splits here: {', '.join(available) or 'none'})"
            )

        memories: list[dict[str, Any]] = []
        seen_docs: set[str] = set()
        for _, row in read_jsonl(source / "corpus.jsonl"):
            doc_id = as_id(row.get("_id"))
            if doc_id is None:
                counts.drop("documents_missing_id")
                continue
            if doc_id in seen_docs:
                counts.drop("documents_duplicate_id")
                continue
            text: str = row["text"] if isinstance(row.get("text"), str) else ""
            title: str = row["title"] if isinstance(row.get("title"), str) else ""
            content = "\n".join(p for p in ((title if self.options.title else ""), text) if p.strip())
            if not content.strip():
                counts.drop("documents_empty")
                continue
            seen_docs.add(doc_id)
            memories.append({"id": doc_id, "content": content, **_known_metadata(row, _MEMORY_METADATA, counts)})

        judgments, emptied = self._read_qrels(qrels_path, seen_docs, counts)

        queries: list[dict[str, Any]] = []
        written: set[str] = set()
        listed: set[str] = set()
        for _, row in read_jsonl(source / "queries.jsonl"):
            query_id = as_id(row.get("_id"))
            query_text = row.get("text")
            if query_id is None:
                counts.drop("queries_missing_id")
                continue
            listed.add(query_id)
            if query_id in emptied:
                counts.drop("queries_without_known_documents")
                continue
            if query_id not in judgments:
                counts.drop("queries_not_in_split")
                continue
            if query_id in written:
                counts.drop("queries_duplicate_id")
                continue
            if not isinstance(query_text, str):
                counts.drop("queries_missing_text")
                continue
            written.add(query_id)
            queries.append({"query_id": query_id, "text": query_text, "stratum": self.options.split,
                            **_known_metadata(row, _QUERY_METADATA, counts)})
        counts.drop("qrels_queries_not_in_queries_file", len(set(judgments) - listed))
        qrels = [qrels_row(q["query_id"], judgments[q["query_id"]], graded=True) for q in queries]
        write_dataset_files(destination, memories, queries, qrels)
        return counts.result(
            memories=len(memories), queries=len(queries),
            judgments=sum(len(judgments[q["query_id"]]) for q in queries),
        )

    def _read_qrels(
        self, path: Path, documents: set[str], counts: Counts
    ) -> tuple[dict[str, dict[str, int]], set[str]]:
        """query-id -> {corpus-id: score} for documents in the corpus; and the queries left with none."""
        judgments: dict[str, dict[str, int]] = {}
        unknown_doc_queries: set[str] = set()
        try:
            self._qrels_lines(path, documents, counts, judgments, unknown_doc_queries)
        except UnicodeDecodeError:
            raise DatasetError(f"{path.name}: not UTF-8 text") from None
        return judgments, unknown_doc_queries - set(judgments)

    def _qrels_lines(self, path: Path, documents: set[str], counts: Counts,
                     judgments: dict[str, dict[str, int]], unknown_doc_queries: set[str]) -> None:
        from recall_kit.dataset import MAX_GRADE, MIN_GRADE

        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                fields = line.rstrip("\n").split("\t") if "\t" in line else line.split()
                fields = [field.strip() for field in fields]
                if not any(fields):
                    continue
                if number == 1 and fields[0].lower() in ("query-id", "query_id", "qid"):
                    continue  # the header
                if len(fields) < 3:
                    raise DatasetError(f"{path.name}:{number}: expected query-id, corpus-id, score")
                query_id, doc_id, raw_score = fields[0], fields[1], fields[2]
                try:
                    # ASCII without "_" only: float() also reads "1_0" as 10 and "١" as 1.
                    if not raw_score.isascii() or "_" in raw_score:
                        raise ValueError(raw_score)
                    value = float(raw_score)
                except ValueError:
                    raise DatasetError(f"{path.name}:{number}: score {raw_score[:40]!r} is not a number") from None
                if not value.is_integer():  # 1.5 was truncated to 1: a grade is an integer
                    raise DatasetError(f"{path.name}:{number}: score {raw_score[:40]!r} is not an integer grade")
                if not MIN_GRADE <= value <= MAX_GRADE:
                    raise DatasetError(f"{path.name}:{number}: score {raw_score[:40]} is outside "
                                       f"{MIN_GRADE}..{MAX_GRADE}")
                score = int(value)
                if doc_id not in documents:
                    counts.drop("judgments_unknown_document")
                    unknown_doc_queries.add(query_id)
                    continue
                judged = judgments.setdefault(query_id, {})
                if doc_id in judged:
                    counts.drop("judgments_duplicate")
                    judged[doc_id] = max(judged[doc_id], score)
                    continue
                judged[doc_id] = score
