"""The order the label page offers pairs in: one query at a time, the queries the study needs first.

`label_order` is the one place the order is decided. It takes the pairs that can move a verdict
(with their weight, `Holes.order()`), the rest of the pool, and the queries that must come first
(a random sample of open queries an interval needs labelled, in the order drawn), and returns the
pairs grouped by query: a query's pairs follow one another, so a person reads each query once.
`check_pairs` draws the already-judged pairs the session mixes in, unannounced, so each
assessor's agreement with the qrels and with the other assessors can be measured.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence

Pair = tuple[str, str]


def label_order(
    weighted: Sequence[tuple[str, str, float]],
    pool: Sequence[Pair] = (),
    first: Sequence[str] = (),
    pinned: str | None = None,
    done: Collection[str] = (),
    sample: Sequence[Pair] = (),
) -> list[Pair]:
    """Every pair of `weighted` and `pool`, grouped by query, in three phases.

    1. The queries of `first` as given (a random sample the study must have labelled whole: every
       pair of theirs, those that can move a verdict first, heaviest first; with `sample`, the
       sample's pairs of each query (every system's holes), then its other pairs that can move a
       verdict; its other pooled pairs wait for phase 3).
    2. The pairs that can move a verdict (`weighted`), one query's after another, the queries by
       their heaviest pair's weight (heaviest first, ties by query id), heaviest first within one.
    3. The rest of the pool, a query's pairs together, in the pool's order.

    `pinned` (the query on screen) goes first in the first phase that still holds pairs, when it
    has pairs there: its group is finished before the next query shows. A query `done` (its group
    was shown and left) never comes back before phase 3: pairs of it that gained weight since wait
    there, ahead of the pool."""
    # ordered sets (dicts), so a query of 100,000 pooled ids costs no more than its ids
    weighted_docs: dict[str, dict[str, None]] = {}
    heaviest: dict[str, float] = {}
    late = [(query, doc) for query, doc, _ in weighted if query in done and query != pinned]
    pool = [*late, *pool]
    for query, doc, weight in weighted:
        if query in done and query != pinned:
            continue
        weighted_docs.setdefault(query, {})[doc] = None
        heaviest[query] = max(heaviest.get(query, weight), weight)
    pool_docs: dict[str, dict[str, None]] = {}
    for query, doc in pool:
        if doc not in weighted_docs.get(query, {}):
            pool_docs.setdefault(query, {})[doc] = None
    if sample:
        wanted: dict[str, dict[str, None]] = {}
        for query, doc in sample:
            wanted.setdefault(query, {})[doc] = None
        chosen: dict[str, list[str]] = {}
        for query in dict.fromkeys(first):
            docs = wanted.get(query, {})
            heavy = [doc for doc in weighted_docs.get(query, {}) if doc in docs]
            chosen[query] = list(dict.fromkeys([*heavy, *docs, *weighted_docs.get(query, {})]))
            for doc in chosen[query]:
                weighted_docs.get(query, {}).pop(doc, None)
                pool_docs.get(query, {}).pop(doc, None)
        weighted_docs = {query: docs for query, docs in weighted_docs.items() if docs}
        pool_docs = {query: docs for query, docs in pool_docs.items() if docs}
        sample_phase = chosen
    else:
        sample_phase = {query: [*weighted_docs.pop(query, {}), *pool_docs.pop(query, {})]
                        for query in dict.fromkeys(first)}
    decisive = {query: list(weighted_docs[query]) for query in sorted(weighted_docs, key=lambda q: (-heaviest[q], q))}
    rest = {query: list(docs) for query, docs in pool_docs.items()}
    phases = [phase for phase in (sample_phase, decisive, rest) if any(phase.values())]
    out: list[Pair] = []
    for number, phase in enumerate(phases):
        lead = [pinned] if pinned is not None and number == 0 and phase.get(pinned) else []
        out += [(query, doc) for query in dict.fromkeys([*lead, *phase]) for doc in phase[query]]
    return out


def check_pairs(counts: Mapping[str, int], judged: Mapping[str, Mapping[str, int]], share: float,
                seed: int = 0) -> dict[Pair, int]:
    """The already-judged pairs to mix in as checks: for a query with `counts[query]` pairs (to label,
    or that others graded), about ``share * count`` (at least two) of its judged pairs, drawn with
    `seed` so that every assessor of a study is asked the same ones (their grades overlap each
    other's and the qrels'). A query's judged-not-relevant pairs are drawn before its relevant ones
    where it has both, so the checks hold both kinds. Returns (query, id) -> the judged grade."""
    if share <= 0:
        return {}
    out: dict[Pair, int] = {}
    for query, count in counts.items():
        known = judged.get(query, {})
        if not known or count <= 0:
            continue
        rng = random.Random(f"{seed}:{query}")
        docs = sorted(known)
        rng.shuffle(docs)
        wanted = min(len(docs), max(2, round(share * count)))
        negatives = [doc for doc in docs if known[doc] <= 0]
        positives = [doc for doc in docs if known[doc] > 0]
        half = min(len(negatives), wanted // 2 if positives else wanted)
        picked = negatives[:half] + positives[:wanted - half]
        out.update({(query, doc): known[doc] for doc in picked})
    return out
