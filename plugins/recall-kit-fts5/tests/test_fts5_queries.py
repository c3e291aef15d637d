"""Any string is a valid fts5 query: nothing raises, and FTS5 syntax never changes a query's meaning."""

from __future__ import annotations

import functools
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from recall_kit_fts5 import FTS5Retriever, query_words, quote_phrase
from recall_kit_fts5.query import FTS5_KEYWORDS, FTS5_SYNTAX_CHARACTERS

from recall_kit import Corpus, Memory, sort_hits

VOCABULARY = ["apple", "banana", "cherry", "content", "tags", "and", "or", "not", "near",
              "café", "東京", "naïve", "x1", "tax"]
TEXTS = [
    "apple banana", "cherry and apple", "not near the content", "café in 東京", "naïve tax x1",
    "tags or apple", "banana banana cherry", "", "emoji 🎉 party", "Ελληνικά κείμενο",
    "control\x07chars\x00inside", 'quotes "inside" text', "tax* NEAR(apple)",
]
CORPUS = Corpus([Memory(id=str(i), content=text, category="fruit" if i % 3 == 0 else "",
                        tags=("tags",) if i % 4 == 0 else (), importance=(i % 5) / 5)
                 for i, text in enumerate(TEXTS)])
CONFIGURATIONS = [
    ("bm25", "unicode61"), ("bm25", "porter"), ("bm25", "trigram"),
    ("production", "unicode61"), ("production", "porter"), ("production", "trigram"),
]
NASTY = [
    "", " ", '"', '""', '"""', "'", "*", "^", ":", "(", ")", "()", "(((", ")))", "-", "+", "{", "}",
    "AND", "OR", "NOT", "NEAR", "NEAR(", "NEAR(apple banana, 2)", "apple AND", "OR apple",
    "NOT apple", "apple NOT banana", "apple OR", "apple*", "*apple", "^apple", "app*le",
    "content:", "content:apple", "{content tags}: apple", "-content: apple", "content:(apple)",
    'apple"banana', '"apple', 'apple"', '"unterminated phrase', "a" * 10_000, "apple " * 2_000,
    ("apple OR " * 1_250)[:10_000], '"' * 10_000, "(" * 5_000, "🎉", "🎉apple🎉", "東京", "Ελληνικά",
    "café", "cafe\u0301", "\x00", "apple\x00banana", "\t\n\r", "\u200b", "\ufeffapple",
    "x1 AND NOT (tax OR near) NEAR/3", "apple + banana", "apple , banana", "\\", "%", "_", "%_",
    "; DROP TABLE memories; --", "' OR 1=1 --", "\uf8ff\ue000",
]


@functools.cache
def retriever(mode: str, tokenizer: str) -> FTS5Retriever:
    built = FTS5Retriever(FTS5Retriever.Options(mode=mode, tokenizer=tokenizer))
    built.build_index(CORPUS)
    return built


def assert_valid(hits, k: int) -> None:
    assert len(hits) <= k
    assert all(hit.id in CORPUS for hit in hits)
    assert hits == sort_hits(hits)
    assert len({hit.id for hit in hits}) == len(hits)


def without_syntax(text: str) -> str:
    """The same words with every FTS5 operator character replaced by a space."""
    return re.sub("[" + re.escape(FTS5_SYNTAX_CHARACTERS) + "]", " ", text)


# -- the query words -----------------------------------------------------------------------------

def test_query_words() -> None:
    assert query_words('content:"tax*" OR (NEAR') == ["content", "tax", "OR", "NEAR"]
    assert query_words("café 東京\x00naïve🎉x1_y") == ["café", "東京", "naïve", "x1", "y"]
    assert query_words("cafe\u0301") == ["cafe\u0301"]  # a combining mark stays in its word
    assert query_words("  \t ") == []


def test_quote_phrase_doubles_inner_quotes() -> None:
    assert quote_phrase("apple") == '"apple"'
    assert quote_phrase('say "hi"') == '"say ""hi"""'


# -- nothing raises ------------------------------------------------------------------------------

@pytest.mark.parametrize(("mode", "tokenizer"), CONFIGURATIONS)
@pytest.mark.parametrize("query", NASTY, ids=lambda q: repr(q[:20]))
def test_nasty_queries_are_plain_text(mode: str, tokenizer: str, query: str) -> None:
    hits = retriever(mode, tokenizer).search(query, 5)
    assert_valid(hits, 5)
    assert hits == retriever(mode, tokenizer).search(without_syntax(query), 5)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=st.text(), configuration=st.sampled_from(CONFIGURATIONS),
       k=st.integers(min_value=1, max_value=20))
@example(query="\x00\x01\x1f\x7f", configuration=("bm25", "unicode61"), k=3)
@example(query='"NEAR("', configuration=("production", "porter"), k=3)
def test_any_text_is_a_valid_query(query: str, configuration: tuple[str, str], k: int) -> None:
    hits = retriever(*configuration).search(query, k)
    assert_valid(hits, k)


# -- meaning is unchanged ------------------------------------------------------------------------

@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=st.text(), configuration=st.sampled_from(CONFIGURATIONS))
def test_operators_removed_same_results(query: str, configuration: tuple[str, str]) -> None:
    found = retriever(*configuration).search(query, 20)
    assert found == retriever(*configuration).search(without_syntax(query), 20)


junk = st.text(alphabet=FTS5_SYNTAX_CHARACTERS + " \t\n", min_size=1, max_size=4)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=5),
       separators=st.lists(junk, min_size=6, max_size=6),
       configuration=st.sampled_from(CONFIGURATIONS))
def test_words_wrapped_in_operators_mean_the_words(words, separators, configuration) -> None:
    wrapped = separators[0] + "".join(w + s for w, s in zip(words, separators[1:], strict=False))
    plain = " ".join(words)
    engine = retriever(*configuration)
    assert engine.search(wrapped, 20) == engine.search(plain, 20)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(st.sampled_from(VOCABULARY + [k.lower() for k in FTS5_KEYWORDS]),
                      min_size=1, max_size=5),
       upper=st.lists(st.booleans(), min_size=5, max_size=5), separator=junk)
def test_bm25_mode_finds_exactly_the_documents_sharing_a_word(words, upper, separator) -> None:
    # An independent reference: lowercase word sets of every indexed field, no FTS5 involved.
    # AND/OR/NOT/NEAR, typed in capitals, are words like any other.
    typed = separator.join(w.upper() if up else w for w, up in zip(words, upper, strict=False))
    wanted = {w.lower() for w in words}
    expected = set()
    for memory in CORPUS:
        text = " ".join([memory.content, memory.category, *memory.tags]).lower()
        if wanted & set(re.findall(r"\w+", text.replace("_", " "))):
            expected.add(memory.id)
    found = {hit.id for hit in retriever("bm25", "unicode61").search(typed, len(CORPUS))}
    assert found == expected


def test_keywords_are_searched_as_words() -> None:
    engine = retriever("bm25", "unicode61")
    assert {hit.id for hit in engine.search("NOT", 20)} == {"2"}
    assert {hit.id for hit in engine.search("NEAR", 20)} == {"2", "12"}
    assert {hit.id for hit in engine.search("AND", 20)} == {"1"}
    # In production mode AND of "cherry" and "NOT" finds nothing, so it broadens to OR.
    assert {hit.id for hit in retriever("production", "unicode61").search("cherry NOT", 20)} == \
        {"1", "2", "6"}


@pytest.mark.parametrize("empty_word", ["\u0301", "\u19b0", "\u0301\u0302"])
def test_words_the_tokenizer_empties_are_dropped(empty_word: str) -> None:
    # A lone combining mark, or a letter newer than SQLite's Unicode tables (U+19B0 is a letter
    # to Python, a mark to SQLite), yields no token. Kept as "" it would empty an AND.
    engine = retriever("production", "unicode61")
    assert query_words(empty_word) == [empty_word]
    assert engine.phrases(f"banana {empty_word}") == ['"banana"']
    assert engine.search(f"banana {empty_word}", 20) == engine.search("banana", 20)
    assert [hit.id for hit in engine.search(f"banana {empty_word} cherry", 20)] == ["6"]
    assert engine.search(empty_word, 20) == []
