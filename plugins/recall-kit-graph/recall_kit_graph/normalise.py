"""Concept-name normalisation and tokenising: one entity, one node, however it is written."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

#: Function words stripped from the ends of a concept name ("the Kestrel project's" -> "kestrel
#: project"), and never concepts on their own. Content words are deliberately absent.
STOPWORDS: frozenset[str] = frozenset(
    ["a", "an", "the", "this", "that", "these", "those", "my", "our", "your", "their", "his", "her", "its", "me", "us", "them", "i", "we", "you", "he", "she", "it", "they", "him", "who", "whom", "whose", "which", "what", "where", "when", "why", "how", "of", "in", "on", "at", "to", "for", "from", "with", "by", "about", "into", "onto", "over", "under", "after", "before", "during", "between", "through", "up", "down", "out", "off", "and", "or", "but", "nor", "if", "so", "as", "than", "then", "there", "here", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "done", "has", "have", "had", "having", "can", "could", "should", "would", "will", "shall", "may", "might", "must", "not", "no", "yes", "all", "any", "each", "every", "some", "such", "only", "own", "same", "too", "very", "just", "also", "now", "s", "t", "again", "both", "few", "more", "most", "other"]
)

# A word: letters/digits, possibly joined by inner - . _ ' + (kestrel-tap, events.v3, Odile's).
WORD_PATTERN = re.compile(r"[^\W_](?:[\w'’+]|[-.](?=\w))*", re.UNICODE)
_SPLIT = re.compile(r"[^\w]+|_+", re.UNICODE)


def _strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def singular(word: str) -> str:
    """A crude English singular, applied the same way to memories and queries (so it need only
    be consistent, not correct): services -> service, libraries -> library, boxes -> box."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def normalise_tokens(text: str) -> list[str]:
    """The normalised words of `text`: case-folded, accents and possessives dropped,
    punctuation as a separator, each word singular, stopwords at either end removed."""
    folded = _strip_accents(unicodedata.normalize("NFKC", text)).casefold()
    folded = re.sub(r"['’]s\b", "", folded)
    folded = folded.replace("'", "").replace("’", "")
    words = [word for word in _SPLIT.split(folded) if word]
    start, end = 0, len(words)
    while start < end and words[start] in STOPWORDS:
        start += 1
    while end > start and words[end - 1] in STOPWORDS:
        end -= 1
    return [singular(word) for word in words[start:end]]


def normalise_concept(text: str) -> str:
    """The canonical name of a concept: "The Kestrel project's", "kestrel projects" and
    "KESTREL-Project" all give "kestrel project"; "" when nothing but stopwords is left."""
    return " ".join(normalise_tokens(text))


def words(text: str) -> Iterator[re.Match[str]]:
    """The words of `text` with their positions (as WORD_PATTERN finds them)."""
    return WORD_PATTERN.finditer(text)


def query_ngrams(text: str, max_length: int = 4) -> list[str]:
    """Every normalised n-gram (1..max_length words) of a query, distinct, longest first."""
    tokens = [match.group() for match in words(text)]
    found: dict[str, int] = {}
    for length in range(max_length, 0, -1):
        for start in range(len(tokens) - length + 1):
            name = normalise_concept(" ".join(tokens[start : start + length]))
            if name and name not in found:
                found[name] = length
    return list(found)
