"""What the label page shows, as JSON: the pair on screen with why it matters, the pairs prefetched
after it, the grade guide and the progress; and the contrast view (two systems' tops side by side).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recall_kit.label.session import LabelSession, Pair

#: How many of a query's judged memories the page shows beside the one being labelled.
JUDGED_SHOWN = 8
#: How many queries the contrast view shows.
CONTRAST_QUERIES = 10
#: Words too common to highlight in a memory.
STOPWORDS = frozenset("a an and are as at be by did do does for from had has have how i in is it its me my "
                      "of on or our she he that the their them they this to was we were what when where which "
                      "who why with you your".split())


def state(session: LabelSession) -> dict[str, Any]:
    """The page's view: the pair shown, the next pairs (prefetched), the scale, the progress."""
    item = item_of(session, session.current) if session.current is not None else None
    return {"item": item, "upcoming": [item_of(session, pair) for pair in session.upcoming()],
            "assessor": session.out.assessor, "given": session.given, "total": len(session.out),
            "scale": [{"value": g.value, "name": g.name, "guide": g.guide} for g in session.scale],
            "can_go_back": bool(session.history), "progress": progress(session), "previous": previous(session),
            **verdicts(session)}


def previous(session: LabelSession) -> dict[str, Any] | None:
    """The pair graded last, with the person's grade and the model judge's: the model's grade is
    shown only once the person has given theirs (never before: no anchoring). None: no such pair,
    or no model graded it."""
    if not session.history:
        return None
    query, doc = session.history[-1]
    mine = session.out.grades.get(query, {}).get(doc)
    model = session.material.model.get(query, {}).get(doc)
    if mine is None or model is None:
        return None
    return {"query_id": query, "doc_id": doc, "grade": mine, "model_grade": model}


def item_of(session: LabelSession, pair: Pair) -> dict[str, Any]:
    """One pair as the page shows it: query, memory, the query's judged memories, why it matters."""
    query, doc = pair
    judged = [{"doc_id": d, "grade": session.grade_of(query, d), "text": session.memories[d].content}
              for d in sorted({*session.known.get(query, {}), *session.out.grades.get(query, {})})
              if d != doc and session.grade_of(query, d) is not None and session.offerable(query, d)]
    judged.sort(key=lambda row: -int(row["grade"] or 0))
    return {"query_id": query, "query": session.queries[query].text, "stratum": session.queries[query].stratum,
            "doc_id": doc, "memory": session.memories[doc].content,
            "grade": session.out.grades.get(query, {}).get(doc), "judged": judged[:JUDGED_SHOWN],
            "note": session.out.notes.get(query, {}).get(doc, ""),
            "flagged": doc in session.out.flagged.get(query, []), "why": why(session, query, doc)}


def why(session: LabelSession, query: str, doc: str) -> dict[str, Any]:
    """Which systems ranked the memory for the query and where, and which verdicts its label can move."""
    ranks = []
    for system, rankings in session.material.rankings.items():
        ranking = rankings.get(query, [])
        ranks.append({"system": system, "rank": ranking.index(doc) + 1 if doc in ranking else None,
                      "depth": len(ranking)})
    moves = []
    if session.holes is not None and not session.already_judged(query, doc):
        moves = [{"metric": c.metric, "scope": c.scope, "candidate": c.candidate, "baseline": c.baseline}
                 for c in session.holes.moved_by(query, doc)]
    return {"ranks": ranks, "moves": moves, "sample": query in session.material.first}


def progress(session: LabelSession) -> dict[str, Any]:
    """Pairs done, pairs left in the queue, pairs left to settle every verdict, the intervals' sample
    (its pairs still unlabelled, its queries done: a model's grade counts as no label), and the time
    left at this assessor's pace (None until two grades give a pace)."""
    queue = session.queue()
    to_settle = session.holes.to_settle() if session.holes is not None else None
    pace = session.pace()
    left = to_settle if to_settle is not None else len(queue)
    ahead = [pair for pair in queue if pair != session.current]
    query = session.current[0] if session.current is not None else None
    in_query = next((i for i, pair in enumerate(ahead) if pair[0] != query), len(ahead))  # the rest of its group
    sample = [pair for pair in session.material.sample if session.offerable(*pair)]
    open_sample = [pair for pair in sample if not session.judged(*pair)]
    waiting = {query for query, _ in open_sample}
    return {"done": len(session.out), "left": len(queue), "to_settle": to_settle,
            "seconds_per_pair": None if pace is None else round(pace, 2),
            "seconds_left": None if pace is None else round(pace * left), "in_query": in_query,
            "sample_left": len(open_sample), "sample_queries": len(session.material.first),
            "sample_queries_done": sum(1 for query in session.material.first if query not in waiting)}


def verdicts(session: LabelSession) -> dict[str, Any]:
    """How many judgments at most settle every watched verdict, and each verdict's state."""
    holes = session.holes
    if holes is None:
        return {"decision": None}
    from recall_kit.decide.holes_report import flip_words

    bounds = [b for i, b in enumerate(holes.bounds(condensed=False)) if holes.contrasts[i].watched]
    return {"decision": {"baseline": session.material.baseline, "challenger": session.material.challenger,
                         "to_settle": holes.to_settle(),
                         "verdicts": [{"metric": b.metric, "scope": b.scope, "verdict": b.verdict,
                                       "low": b.low, "high": b.high, "flip": flip_words(b)} for b in bounds]}}


def query_terms(text: str) -> list[str]:
    """The query's words worth highlighting in a memory: lower-case, two letters or more, no stopword."""
    words = re.findall(r"\w+", text.lower())
    return list(dict.fromkeys(w for w in words if len(w) > 1 and w not in STOPWORDS))


def contrast(session: LabelSession, limit: int = CONTRAST_QUERIES) -> dict[str, Any]:
    """The queries where the challenger and the baseline differ most, their tops side by side, as
    DiffIR shows them: each hit with its id, its judgment, its rank in the other list (linked) and
    how far it moved; the query's terms to highlight."""
    m = session.material
    if m.baseline is None or m.challenger is None:
        return {"queries": []}
    k = m.hook_k
    rows = []
    for query in session.queries:
        if query not in m.rankings[m.baseline] or query not in m.rankings[m.challenger]:
            continue
        a, b = m.rankings[m.baseline][query][:k], m.rankings[m.challenger][query][:k]
        rows.append((rank_distance(a, b), query, a, b))
    rows.sort(key=lambda row: (-row[0], row[1]))
    return {"baseline": m.baseline, "challenger": m.challenger, "k": k,
            "queries": [{"query_id": q, "query": session.queries[q].text, "terms": query_terms(session.queries[q].text),
                         "distance": round(d, 4), "baseline": _hits(session, q, a, b),
                         "challenger": _hits(session, q, b, a)}
                        for d, q, a, b in rows[:limit]]}


def _hits(session: LabelSession, query: str, ranking: Sequence[str], other: Sequence[str]) -> list[dict[str, Any]]:
    hits = []
    for rank, doc in enumerate(ranking, start=1):
        shown = session.offerable(query, doc)
        twin = other.index(doc) + 1 if doc in other else None
        hits.append({"rank": rank, "doc_id": doc, "grade": session.grade_of(query, doc), "other_rank": twin,
                     "text": session.memories[doc].content if shown else None, "offerable": shown})
    return hits


def rank_distance(a: Sequence[str], b: Sequence[str]) -> float:
    """How differently two top-k lists rank: 1 - the rank-biased overlap at p = 0.9 (Webber et al. 2010),
    truncated at their depth; 0 for the same list, 1 for disjoint ones."""
    depth = max(len(a), len(b))
    if depth == 0:
        return 0.0
    p, total, norm = 0.9, 0.0, 0.0
    for d in range(1, depth + 1):
        overlap = len(set(a[:d]) & set(b[:d])) / d
        total += p ** (d - 1) * overlap
        norm += p ** (d - 1)
    return 1.0 - total / norm
