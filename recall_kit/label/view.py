"""What the label page shows, as JSON: the pair on screen with why it matters, the pairs prefetched
after it, the grade guide and the progress (`PageState`); and the contrast view (two systems' tops
side by side, `Contrast`). Each view is a tree of frozen dataclasses; `to_json` is what the server sends.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from recall_kit.curate.scale import Grade

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


@dataclass(frozen=True)
class Judged:
    """One of the query's judged memories, shown beside the one being labelled."""

    doc_id: str
    grade: int | None
    text: str


@dataclass(frozen=True)
class Rank:
    """Where one system ranked the memory for the query (None: not in its ranking of `depth`)."""

    system: str
    rank: int | None
    depth: int


@dataclass(frozen=True)
class Move:
    """A decision row the pair's label can move."""

    metric: str
    scope: str
    candidate: str
    baseline: str


@dataclass(frozen=True)
class Why:
    """Why the pair is asked: the systems' ranks, the rows it can move, whether it is in the study's sample."""

    ranks: list[Rank]
    moves: list[Move]
    sample: bool


@dataclass(frozen=True)
class Item:
    """One pair as the page shows it: query, memory, the query's judged memories, why it matters."""

    query_id: str
    query: str
    stratum: str
    doc_id: str
    memory: str
    grade: int | None
    judged: list[Judged]
    note: str
    flagged: bool
    why: Why


@dataclass(frozen=True)
class Progress:
    """Pairs done, left in the queue and left to settle every verdict; the pace and the time left
    (None until two grades give a pace); the pairs left in the shown query's group."""

    done: int
    left: int
    to_settle: int | None
    seconds_per_pair: float | None
    seconds_left: int | None
    in_query: int
    #: The intervals' sample: its pairs no person has labelled yet, its queries, those done.
    sample_left: int = 0
    sample_queries: int = 0
    sample_queries_done: int = 0


@dataclass(frozen=True)
class VerdictRow:
    """One watched verdict's state: its bounds and the words that say whether it can flip."""

    metric: str
    scope: str
    verdict: str
    low: float
    high: float
    flip: str


@dataclass(frozen=True)
class Decision:
    """The decision labels can settle: baseline, challenger, judgments at most to settle it, its verdicts."""

    baseline: str | None
    challenger: str | None
    to_settle: int
    verdicts: list[VerdictRow]


@dataclass(frozen=True)
class Previous:
    """The pair graded last: the person's grade and the model judge's."""

    query_id: str
    doc_id: str
    grade: int
    model_grade: int


@dataclass(frozen=True)
class PageState:
    """The page's view: the pair shown, the next pairs (prefetched), the scale, the progress, the decision."""

    item: Item | None
    upcoming: list[Item]
    assessor: str
    given: int
    total: int
    scale: list[Grade]
    can_go_back: bool
    progress: Progress
    #: The pair graded last, with the model judge's grade beside the person's (after it, never before).
    previous: Previous | None
    decision: Decision | None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Hit:
    """One hit of a top list in the contrast view (its text only where it may be shown)."""

    rank: int
    doc_id: str
    grade: int | None
    other_rank: int | None
    text: str | None
    offerable: bool


@dataclass(frozen=True)
class ContrastQuery:
    """One query of the contrast view: the two top lists side by side and the terms to highlight."""

    query_id: str
    query: str
    terms: list[str]
    distance: float
    baseline: list[Hit]
    challenger: list[Hit]


@dataclass(frozen=True)
class Contrast:
    """The contrast view: the queries where the challenger and the baseline differ most (none where
    the study has no challenger)."""

    baseline: str | None = None
    challenger: str | None = None
    k: int | None = None
    queries: list[ContrastQuery] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        if self.baseline is None or self.challenger is None:
            return {"queries": []}
        return dataclasses.asdict(self)


def state(session: LabelSession) -> PageState:
    """The page's view: the pair shown, the next pairs (prefetched), the scale, the progress."""
    item = item_of(session, session.current) if session.current is not None else None
    return PageState(item=item, upcoming=[item_of(session, pair) for pair in session.upcoming()],
                     assessor=session.out.assessor, given=session.given, total=len(session.out),
                     scale=list(session.scale), can_go_back=bool(session.history), progress=progress(session),
                     previous=previous(session), decision=decision(session))


def previous(session: LabelSession) -> Previous | None:
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
    return Previous(query_id=query, doc_id=doc, grade=mine, model_grade=model)


def item_of(session: LabelSession, pair: Pair) -> Item:
    """One pair as the page shows it: query, memory, the query's judged memories, why it matters."""
    query, doc = pair
    judged = [Judged(d, session.grade_of(query, d), session.memories[d].content)
              for d in sorted({*session.known.get(query, {}), *session.out.grades.get(query, {})})
              if d != doc and session.grade_of(query, d) is not None and session.offerable(query, d)]
    judged.sort(key=lambda row: -int(row.grade or 0))
    return Item(query_id=query, query=session.queries[query].text, stratum=session.queries[query].stratum,
                doc_id=doc, memory=session.memories[doc].content, grade=session.out.grades.get(query, {}).get(doc),
                judged=judged[:JUDGED_SHOWN], note=session.out.notes.get(query, {}).get(doc, ""),
                flagged=doc in session.out.flagged.get(query, []), why=why(session, query, doc))


def why(session: LabelSession, query: str, doc: str) -> Why:
    """Which systems ranked the memory for the query and where, and which verdicts its label can move."""
    ranks = []
    for system, rankings in session.material.rankings.items():
        ranking = rankings.get(query, [])
        ranks.append(Rank(system, ranking.index(doc) + 1 if doc in ranking else None, len(ranking)))
    moves = []
    if session.holes is not None and not session.already_judged(query, doc):
        moves = [Move(c.metric, c.scope, c.candidate, c.baseline) for c in session.holes.moved_by(query, doc)]
    return Why(ranks, moves, query in session.material.first)


def progress(session: LabelSession) -> Progress:
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
    return Progress(done=len(session.out), left=len(queue), to_settle=to_settle,
                    seconds_per_pair=None if pace is None else round(pace, 2),
                    seconds_left=None if pace is None else round(pace * left), in_query=in_query,
                    sample_left=len(open_sample), sample_queries=len(session.material.first),
                    sample_queries_done=sum(1 for query in session.material.first if query not in waiting))


def decision(session: LabelSession) -> Decision | None:
    """How many judgments at most settle every watched verdict, and each verdict's state (None: no decision)."""
    holes = session.holes
    if holes is None:
        return None
    from recall_kit.decide.holes_report import flip_words

    bounds = [b for i, b in enumerate(holes.bounds(condensed=False)) if holes.contrasts[i].watched]
    return Decision(baseline=session.material.baseline, challenger=session.material.challenger,
                    to_settle=holes.to_settle(),
                    verdicts=[VerdictRow(b.metric, b.scope, b.verdict, b.low, b.high, flip_words(b)) for b in bounds])


def query_terms(text: str) -> list[str]:
    """The query's words worth highlighting in a memory: lower-case, two letters or more, no stopword."""
    words = re.findall(r"\w+", text.lower())
    return list(dict.fromkeys(w for w in words if len(w) > 1 and w not in STOPWORDS))


def contrast(session: LabelSession, limit: int = CONTRAST_QUERIES) -> Contrast:
    """The queries where the challenger and the baseline differ most, their tops side by side, as
    DiffIR shows them: each hit with its id, its judgment, its rank in the other list (linked) and
    how far it moved; the query's terms to highlight."""
    m = session.material
    if m.baseline is None or m.challenger is None:
        return Contrast()
    k = m.hook_k
    rows = []
    for query in session.queries:
        if query not in m.rankings[m.baseline] or query not in m.rankings[m.challenger]:
            continue
        a, b = m.rankings[m.baseline][query][:k], m.rankings[m.challenger][query][:k]
        rows.append((rank_distance(a, b), query, a, b))
    rows.sort(key=lambda row: (-row[0], row[1]))
    return Contrast(baseline=m.baseline, challenger=m.challenger, k=k, queries=[
        ContrastQuery(query_id=q, query=session.queries[q].text, terms=query_terms(session.queries[q].text),
                      distance=round(d, 4), baseline=_hits(session, q, a, b), challenger=_hits(session, q, b, a))
        for d, q, a, b in rows[:limit]])


def _hits(session: LabelSession, query: str, ranking: Sequence[str], other: Sequence[str]) -> list[Hit]:
    hits = []
    for rank, doc in enumerate(ranking, start=1):
        shown = session.offerable(query, doc)
        hits.append(Hit(rank=rank, doc_id=doc, grade=session.grade_of(query, doc),
                        other_rank=other.index(doc) + 1 if doc in other else None,
                        text=session.memories[doc].content if shown else None, offerable=shown))
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
