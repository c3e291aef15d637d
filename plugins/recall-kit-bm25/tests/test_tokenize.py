"""The shared tokenizer: lowercase word runs, the stop-word list, Harman's S-stemmer."""

from __future__ import annotations

import pytest
from recall_kit_bm25.stopwords import ENGLISH_STOPWORDS
from recall_kit_bm25.tokenize import s_stem, tokenize


def test_lowercase_unicode_word_runs_in_order_with_repeats() -> None:
    assert tokenize("Café-au-lait, v2! CAFÉ") == ["café", "au", "lait", "v2", "café"]
    assert tokenize("Ünïcode ДОМ 東京 snake_case") == ["ünïcode", "дом", "東京", "snake_case"]


def test_nothing_to_tokenize() -> None:
    assert tokenize("") == []
    assert tokenize("  ?!  --- ") == []


def test_stopwords_are_dropped_only_when_asked() -> None:
    text = "The cat is on the mat"
    assert tokenize(text) == ["the", "cat", "is", "on", "the", "mat"]
    assert tokenize(text, stopwords=True) == ["cat", "mat"]
    # Negations carry meaning in memories and are not stop words.
    assert {"not", "no", "never"}.isdisjoint(ENGLISH_STOPWORDS)


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("queries", "query"),  # rule 1: "-ies" -> "-y"
        ("movies", "movy"),  # rule 1 is blind to meaning, as published
        ("notes", "note"),  # rule 2: "-es" -> "-e"
        ("shoes", "shoe"),  # "-oes" skips rule 2, then rule 3 drops the "s"
        ("employees", "employee"),  # "-ees" skips rule 2, then rule 3
        ("meetings", "meeting"),  # rule 3
        ("glass", "glass"),  # "-ss" kept
        ("status", "status"),  # "-us" kept
        ("gas", "gas"),  # three letters or fewer: untouched
        ("coffee", "coffee"),
    ],
)
def test_s_stemmer(word: str, stem: str) -> None:
    assert s_stem(word) == stem


def test_stemming_applies_to_tokens_after_stopwords() -> None:
    assert tokenize("The Meetings and notes", stopwords=True, stemming=True) == ["meeting", "note"]
