"""A small real retriever and a tiny dataset for the host's tests."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from recall_kit import Corpus, Hit, Retriever, hookimpl


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class OverlapRetriever(Retriever):
    """Scores a memory by how many distinct query words it shares (a real, simple ranking)."""

    description = "word overlap (tests)"

    @dataclass(frozen=True)
    class Options:
        min_overlap: int = 1
        boost: float = 0.0

    def build_index(self, corpus: Corpus) -> None:
        self.index = [(memory.id, words(memory.searchable_text)) for memory in corpus]
        self.built = True

    def search(self, query: str, k: int) -> list[Hit]:
        terms = words(query)
        scored = [(len(terms & doc_words) + self.options.boost, doc_id) for doc_id, doc_words in self.index]
        hits = [Hit(doc_id, float(score)) for score, doc_id in scored if score - self.options.boost >= self.options.min_overlap]
        hits.sort(key=lambda hit: (-hit.score, hit.id))
        return hits[:k]

    def index_size_bytes(self) -> int:
        return sum(len(w) for _, doc_words in self.index for w in doc_words)


class OverlapPlugin:
    """Registers `overlap` the way a third-party plugin would."""

    @hookimpl
    def register_retrievers(self, register):  # type: ignore[no-untyped-def]
        register("overlap", OverlapRetriever)


CORPUS = [
    {"id": 1, "content": "Kestrel stores events in ClickHouse", "tags": "kestrel"},
    {"id": 2, "content": "Priya Raman leads the Kestrel project", "tags": "kestrel,people"},
    {"id": 3, "content": "Flat white before nine, no sugar", "category": "preference"},
    {"id": 4, "content": "Rotate the Driftwood API keys every quarter", "category": "runbook"},
    {"id": 5, "content": "Driftwood deploys run on Fridays", "category": "runbook"},
    {"id": 6, "content": "private note", "is_sensitive": True},
]
QUERIES = [
    {"query_id": "e1", "text": "stores events in ClickHouse", "stratum": "exact"},
    {"query_id": "e2", "text": "rotate the Driftwood API keys", "stratum": "exact"},
    {"query_id": "p1", "text": "morning coffee order", "stratum": "paraphrase"},
    {"query_id": "m1", "text": "Which database does Priya's project use?", "stratum": "multihop"},
]
QRELS = [
    {"query_id": "e1", "relevant_ids": [1]},
    {"query_id": "e2", "relevant_ids": [4]},
    {"query_id": "p1", "relevant_ids": [3]},
    {"query_id": "m1", "relevance": {"1": 2, "2": 1, "5": 0}},
]


def write_dataset(folder: Path, corpus=CORPUS, queries=QUERIES, qrels=QRELS) -> Path:  # type: ignore[no-untyped-def]
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("corpus", corpus), ("queries", queries), ("qrels", qrels)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder
