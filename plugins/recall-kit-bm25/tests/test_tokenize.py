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


# Snowball English ("Porter 2"): expected stems from the published algorithm's vocabulary/output
# lists (snowballstem.org/algorithms/english), worked by hand for these words.
@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("running", "run"),
        ("generously", "generous"),
        ("adoption", "adopt"),
        ("painting", "paint"),
        ("happiness", "happi"),
        ("pottery", "potteri"),
        ("conversations", "convers"),
        ("caresses", "caress"),
    ],
)
def test_snowball_stems(word: str, stem: str) -> None:
    assert tokenize(word, stemming=True, stemmer="snowball") == [stem]


def test_snowball_is_identical_to_the_reference_implementations() -> None:
    """PyStemmer's own stemWords and the pure-Python snowballstemmer package agree with the
    tokenizer on every token of a text that exercises many suffix rules."""
    import snowballstemmer
    import Stemmer

    text = (
        "Caroline went hiking and painted sunsets; Melanie's kids adopted two puppies. The "
        "conversations were generously relational, nationalistic, and hopefully effective: "
        "she considered adoption agencies, volunteering, mentorship, and counselling careers. "
        "Ünïcode ДОМ running runner ran skies dying lying agreed feed bled"
    )
    words = tokenize(text)
    ours = tokenize(text, stemming=True, stemmer="snowball")
    assert ours == Stemmer.Stemmer("english").stemWords(words)
    assert ours == snowballstemmer.stemmer("english").stemWords(words)
    # The S-stemmer stays the default stemmer.
    assert tokenize("puppies", stemming=True) == ["puppy"]


def test_stop_words_are_removed_before_snowball_stemming() -> None:
    assert tokenize("The painters were painting", stopwords=True, stemming=True, stemmer="snowball") == [
        "painter", "paint"]
