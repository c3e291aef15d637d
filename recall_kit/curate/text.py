"""Shared text helpers of the evaluation-set tools: normalisation, word sets, shingles, MinHash/LSH."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from recall_kit.types import Memory

if TYPE_CHECKING:
    import numpy as np

#: A standard English stopword list (the one examples/memories/check.py uses).
STOPWORDS: frozenset[str] = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "s", "t", "d", "ll", "m", "re", "ve", "don", "didn", "doesn", "isn", "wasn", "won", "can't", "i'm", "i've", "i'd", "it's", "what's", "where's"]
)

# Letters and digits; '_' is a separator (as in check.py).
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SPACE = re.compile(r"\s+")
# Between two searchable fields, so that no phrase can run from one field into the next.
FIELD_SEPARATOR = "\x1f"


def normalise(text: str) -> str:
    """Lowercase, with every run of whitespace turned into one space, trimmed."""
    return _SPACE.sub(" ", text.lower()).strip()


def words(text: str) -> list[str]:
    """Lowercase word tokens (letters and digits), in order."""
    return _WORD.findall(text.lower())


def content_words(text: str) -> set[str]:
    """The set of lowercase words with stopwords removed."""
    return {word for word in words(text) if word not in STOPWORDS}


def jaccard(left: set, right: set) -> float:
    """|A ∩ B| / |A ∪ B|; 0.0 when both are empty."""
    union = len(left | right)
    return len(left & right) / union if union else 0.0


def word_overlap(query: str, memory: Memory) -> float:
    """Jaccard of content word sets: the query against the memory's content + expanded_keywords."""
    return jaccard(content_words(query), content_words(memory.content + " " + memory.expanded_keywords))


def searchable_normalised(memory: Memory) -> str:
    """Every searchable field of a memory, each normalised, joined by a separator no phrase holds."""
    fields = [memory.content, memory.category, " ".join(memory.tags), memory.expanded_keywords]
    return FIELD_SEPARATOR.join(normalise(field) for field in fields if field)


def shingles(text: str, size: int) -> set[tuple[str, ...]]:
    """Word `size`-grams of a text (lowercase words, stopwords kept); a shorter text is one shingle."""
    tokens = words(text)
    if not tokens:
        return set()
    if len(tokens) <= size:
        return {tuple(tokens)}
    return {tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}


# -- MinHash / LSH -------------------------------------------------------------------------------

_PRIME = (1 << 31) - 1  # a*h + b stays below 2**62: no overflow in int64


def _shingle_hash(shingle: tuple[str, ...]) -> int:
    digest = hashlib.blake2b("\x00".join(shingle).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % _PRIME


def minhash_signatures(shingle_sets: Sequence[set[tuple[str, ...]]], num_perm: int, seed: int = 1) -> np.ndarray:
    """(N, num_perm) MinHash signatures, one row per set, with hash functions (a*h + b) mod p.

    Two rows agree in one column with probability equal to the sets' Jaccard (Broder 1997).
    An empty set's row is all p (agrees with nothing but another empty set).
    """
    import numpy as np  # here: the query generators that use this module register for `plugins`

    rng = np.random.default_rng(seed)
    a = rng.integers(1, _PRIME, size=num_perm, dtype=np.int64)
    b = rng.integers(0, _PRIME, size=num_perm, dtype=np.int64)
    signatures = np.full((len(shingle_sets), num_perm), _PRIME, dtype=np.int64)
    for row, items in enumerate(shingle_sets):
        if not items:
            continue
        hashes = np.fromiter((_shingle_hash(item) for item in items), dtype=np.int64, count=len(items))
        signatures[row] = ((np.outer(hashes, a) + b) % _PRIME).min(axis=0)
    return signatures


def lsh_bands(threshold: float, num_perm: int, recall: float = 0.995) -> tuple[int, int]:
    """(bands, rows) with bands * rows <= num_perm: the most rows per band (fewest false
    candidates) for which a pair at exactly `threshold` still becomes a candidate with
    probability >= `recall`, 1 - (1 - t**r)**b."""
    best = (num_perm, 1)
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        if 1 - (1 - threshold**rows) ** bands >= recall:
            best = (bands, rows)
    return best


def near_duplicate_pairs(
    texts: Sequence[str],
    threshold: float,
    shingle_size: int = 2,
    method: str = "auto",
    num_perm: int = 128,
    exact_limit: int = 2000,
) -> list[tuple[int, int, float]]:
    """Index pairs (i < j) whose word-shingle Jaccard is at least `threshold`, with that Jaccard.

    `method`: "exact" compares every pair; "lsh" draws candidates from MinHash bands and
    re-checks each candidate's exact Jaccard (so no false positive survives; a true pair can be
    missed with probability below 0.5% at the threshold, less above it); "auto" is exact up to
    `exact_limit` texts, LSH beyond.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    sets = [shingles(text, shingle_size) for text in texts]
    if method == "auto":
        method = "exact" if len(texts) <= exact_limit else "lsh"
    if method == "exact":
        candidates: Iterable[tuple[int, int]] = (
            (i, j) for i in range(len(sets)) for j in range(i + 1, len(sets))
        )
    elif method == "lsh":
        candidates = _lsh_candidates(sets, threshold, num_perm)
    else:
        raise ValueError(f"method must be auto, exact or lsh, got {method!r}")
    pairs = []
    for i, j in candidates:
        if not sets[i] or not sets[j]:
            continue
        # Cheap bound before the set algebra: J <= min/max of the sizes.
        small, large = sorted((len(sets[i]), len(sets[j])))
        if small / large < threshold:
            continue
        similarity = jaccard(sets[i], sets[j])
        if similarity >= threshold - 1e-12:
            pairs.append((i, j, similarity))
    return sorted(pairs)


def _lsh_candidates(sets: Sequence[set[tuple[str, ...]]], threshold: float, num_perm: int) -> list[tuple[int, int]]:
    bands, rows = lsh_bands(threshold, num_perm)
    signatures = minhash_signatures(sets, num_perm)
    candidates: set[tuple[int, int]] = set()
    for band in range(bands):
        buckets: dict[bytes, list[int]] = {}
        block = signatures[:, band * rows : (band + 1) * rows]
        for index in range(len(sets)):
            if sets[index]:
                buckets.setdefault(block[index].tobytes(), []).append(index)
        for members in buckets.values():
            if len(members) > 1:
                for x in range(len(members)):
                    for y in range(x + 1, len(members)):
                        candidates.add((members[x], members[y]))
    return sorted(candidates)


def idf_table(documents: Iterable[set[str]]) -> tuple[dict[str, float], int]:
    """Smoothed inverse document frequency, log((N + 1) / (df + 1)) + 1, per word; and N."""
    frequency: dict[str, int] = {}
    count = 0
    for document in documents:
        count += 1
        for word in document:
            frequency[word] = frequency.get(word, 0) + 1
    return {word: math.log((count + 1) / (df + 1)) + 1.0 for word, df in frequency.items()}, count
