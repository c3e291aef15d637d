"""`ranking=numpy` ranks exactly as SQLite's `ORDER BY -bm25() DESC, doc_id DESC LIMIT k`: the
same ids, in the same order, with the same float scores, over many queries, weights and ties."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from recall_kit_fts5 import FTS5Retriever
from recall_kit_fts5.ranking import read_varint, read_varints

from recall_kit import Corpus, Memory

Options = FTS5Retriever.Options
#: Strange strings: FTS5 syntax, quotes, control characters, marks, emoji, long and repeated words.
STRANGE = ["", " ", '"', '""', "*", "(", "AND", "OR", "NOT", "NEAR(trip visa, 2)", "trip*", "^trip",
           "content:trip", "{content tags}: visa", 'trip"visa', "'", "\x00", "trip\x00visa", "\u200b",
           "\ufefftrip", "cafe\u0301", "Café CAFÉ", "東京", "🎉trip🎉", "\uf8ff\ue000", "\u19b0 visa", "trip\u19b0visa the",
           "trip " * 500, "x1 AND NOT (tax OR near) NEAR/3", "; DROP TABLE memories; --", "% _ \\"]
WORDS = ["the", "a", "trip", "visa", "passport", "running", "runs", "runner", "café", "cafe",
         "東京", "meeting", "meetings", "notes", "tax", "NEAR", "and", "x1", "Ελληνικά", "naïve"]


def corpus(seed: int = 7, size: int = 240) -> Corpus:
    """Zipf-like word use, exact duplicates (ties), empty fields and ids that sort differently
    as numbers, as text and as UTF-8 bytes."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(WORDS))]
    memories = []
    for index in range(size):
        if index % 17 == 5 and memories:  # a copy of an earlier memory: every score ties
            earlier = memories[rng.randrange(len(memories))]
            content, category, tags = earlier.content, earlier.category, earlier.tags
        else:
            content = " ".join(rng.choices(WORDS, weights, k=rng.randint(0, 12)))
            category = rng.choice(["", "travel", "the tax", "meeting notes"])
            tags = tuple(rng.sample(WORDS, rng.randint(0, 3)))
        ident = rng.choice([str(index), f"m{index:04d}", f"é{index}", f"Z{index}", f"\U0001f389{index}"])
        memories.append(Memory(id=ident, content=content, category=category, tags=tags,
                               expanded_keywords=" ".join(rng.sample(WORDS, rng.randint(0, 2)))))
    return Corpus(memories)


def queries(seed: int = 11, count: int = 150) -> list[str]:
    rng = random.Random(seed)
    made = [" ".join(rng.choices(WORDS + ["unknownword", "zzz"], k=rng.randint(1, 6)))
            for _ in range(count)]
    return made + ["the", "the the the", "THE Trip", "trip trip visa", "\u0301 trip", "runs", *STRANGE]


WEIGHTS = [
    {},
    {"content_weight": 2.5, "category_weight": 0.1, "tags_weight": 0.0, "keywords_weight": 3.3},
    {"content_weight": 0.1, "category_weight": 0.7, "tags_weight": 1.3, "keywords_weight": 0.3},
]


def pair(memories: Corpus, **options) -> tuple[FTS5Retriever, FTS5Retriever]:
    fast = FTS5Retriever(Options(ranking="numpy", **options))
    slow = FTS5Retriever(Options(ranking="sqlite", **options))
    fast.build_index(memories)
    slow.build_index(memories)
    assert fast._statistics is not None and slow._statistics is None
    return fast, slow


@pytest.mark.parametrize("tokenizer", ["unicode61", "porter"])
@pytest.mark.parametrize("weights", WEIGHTS, ids=["unit", "skewed", "fractional"])
def test_numpy_ranking_is_sqlites(tokenizer: str, weights: dict[str, float]) -> None:
    memories = corpus()
    fast, slow = pair(memories, tokenizer=tokenizer, **weights)
    ties = 0
    for query in queries():
        for k in (1, 3, 10, 1000):
            expected = slow.search(query, k)
            found = fast.search(query, k)
            # Same ids, same order, the same floats (not merely close).
            assert [(hit.id, hit.score) for hit in found] == [(hit.id, hit.score) for hit in expected], (query, k)
            ties += len(expected) - len({hit.score for hit in expected})
    assert ties > 100  # the ties (and their id order) were exercised


def test_numpy_ranking_with_fewer_columns_and_a_persisted_index(tmp_path: Path) -> None:
    memories = corpus(seed=3, size=120)
    path = str(tmp_path / "index.sqlite")
    opened = []
    for _ in range(2):  # built, then reopened from the file (while the first two stay open)
        fast, slow = pair(memories, columns=("content", "tags"), path=path, content_weight=1.7)
        for query in queries(seed=5, count=60):
            assert fast.search(query, 10) == slow.search(query, 10)
        opened += [fast, slow]
    assert [retriever.index_stats()["reused_from_disk"] for retriever in opened] == [False, True, True, True]


def test_words_of_several_tokens_and_trigram_are_ranked_by_sqlite() -> None:
    memories = corpus(seed=2, size=60)
    fast, slow = pair(memories)
    # U+19B0 is a letter to Python (one word) and a separator to SQLite (two tokens): a phrase.
    assert fast._tokenizes(["trip\u19b0visa"]) == {"trip\u19b0visa": ("trip", "visa")}
    assert fast.search("trip\u19b0visa the", 50) == slow.search("trip\u19b0visa the", 50) != []
    trigram = FTS5Retriever(Options(tokenizer="trigram"))
    trigram.build_index(memories)
    assert trigram._statistics is None  # every long word is a phrase of trigrams
    production = FTS5Retriever(Options(mode="production"))
    production.build_index(memories)
    assert production._statistics is None


def test_varints_as_sqlite_writes_them() -> None:
    # 1 byte up to 127; 0x81 0x00 = 128; 9 bytes: eight 7-bit groups then a full byte.
    assert read_varints(bytes([0, 127, 0x81, 0x00, 0x82, 0x80, 0x01])) == [0, 127, 128, 2 * 16384 + 1]
    assert read_varint(bytes([0xFF] * 8 + [0xFF]), 0) == (2**64 - 1, 9)
    with pytest.raises(ValueError):
        read_varint(bytes([0x81]), 0)
