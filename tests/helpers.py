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


def _turns(session: int, lines: list[tuple[str, str]]) -> list[dict]:
    return [{"speaker": speaker, "dia_id": f"D{session}:{number}", "text": text}
            for number, (speaker, text) in enumerate(lines, start=1)]


# Two small synthetic conversations in LoCoMo's JSON format, made for the tests (no LoCoMo text).
# Most answers sit in a short reply ("Yes, loved it!") whose topic is named only by the turn
# before it, which is what context expansion is for.
CONVERSATIONS = [
    {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": _turns(1, [
                ("Bob", "How was the pottery class last weekend?"),
                ("Ann", "Yes, loved it! I made a wobbly bowl."),
                ("Bob", "Are you still thinking about adopting a beagle?"),
                ("Ann", "We signed the papers on Tuesday."),
                ("Bob", "My sister moved to Lisbon for her new job."),
                ("Ann", "That sounds exciting, she must be thrilled."),
            ]),
            "session_2_date_time": "10:00 am on 20 June, 2023",
            "session_2": _turns(2, [
                ("Ann", "I ran my first half marathon in Porto."),
                ("Bob", "Incredible, what was your finishing time?"),
                ("Ann", "Just under two hours."),
                ("Bob", "I started learning the cello in March."),
                ("Ann", "Is it hard on your fingers?"),
                ("Bob", "Very, but the teacher is patient."),
            ]),
        },
        "qa": [
            {"question": "Did Ann enjoy the pottery class?", "answer": "yes", "evidence": ["D1:2"], "category": 4},
            {"question": "When did Ann adopt the beagle?", "answer": "Tuesday", "evidence": ["D1:4"], "category": 2},
            {"question": "How long did Ann's half marathon take?", "answer": "under two hours",
             "evidence": ["D2:3"], "category": 4},
            {"question": "Where did Bob's sister move?", "answer": "Lisbon", "evidence": ["D1:5"], "category": 4},
            {"question": "Which instrument is hard on Bob's fingers?", "answer": "cello",
             "evidence": ["D2:4", "D2:6"], "category": 1},
        ],
    },
    {
        "sample_id": "conv-b",
        "conversation": {
            "speaker_a": "Cy", "speaker_b": "Di",
            "session_1_date_time": "9:15 am on 3 March, 2024",
            "session_1": _turns(1, [
                ("Di", "Did the kayak trip on the lake happen?"),
                ("Cy", "It did, we saw two otters."),
                ("Di", "I finally finished painting the kitchen blue."),
                ("Cy", "Send me a photo when it dries."),
            ]),
            "session_2_date_time": "4:30 pm on 9 April, 2024",
            "session_2": _turns(2, [
                ("Cy", "My grandmother turns ninety next week."),
                ("Di", "Are you planning a party for her?"),
                ("Cy", "A garden lunch with the whole family."),
                ("Di", "The bakery on Elm Street makes great cakes."),
            ]),
        },
        "qa": [
            {"question": "What animals did Cy see on the kayak trip?", "answer": "otters",
             "evidence": ["D1:2"], "category": 4},
            {"question": "How will Cy celebrate the grandmother's birthday?", "answer": "garden lunch",
             "evidence": ["D2:3"], "category": 3},
            {"question": "What colour is Di's kitchen?", "answer": "blue", "evidence": ["D1:3"], "category": 4},
        ],
    },
]


def write_conversations(folder: Path) -> Path:
    """The synthetic conversations imported with the locomo importer into `folder`; returns it."""
    from recall_kit.curate.importers import import_dataset

    folder.mkdir(parents=True, exist_ok=True)
    source = folder.parent / f"{folder.name}-locomo.json"
    source.write_text(json.dumps(CONVERSATIONS), encoding="utf-8")
    import_dataset("locomo", source, folder)
    return folder


class ReverseIdRetriever(Retriever):
    """A deliberately poor leg: every memory, by id descending, whatever the query."""

    def build_index(self, corpus: Corpus) -> None:
        self.ids = sorted(corpus.ids, reverse=True)

    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit(doc_id, float(len(self.ids) - rank)) for rank, doc_id in enumerate(self.ids[:k])]
