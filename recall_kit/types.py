"""The data types and the base classes that plugins implement: memories, queries, hits, retrievers,
fusions, metrics, reporters and importers."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from recall_kit.fingerprint import canonical_json

if TYPE_CHECKING:  # numpy loads only when a command needs it: `recall-kit --help` stays fast
    import numpy as np

# A document id is always compared as a string; integer ids in the data are turned into strings on load.
DocId = str
# query_id -> {doc_id: grade}; grade >= 1 is relevant, 0 is judged not relevant (as in trec_eval).
Qrels = dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class Memory:
    """One row of a corpus. Only `id` and `content` are required."""

    id: DocId
    content: str
    category: str = ""
    tags: tuple[str, ...] = ()
    expanded_keywords: str = ""
    importance: float | None = None
    scope: str | None = None
    parent_id: DocId | None = None
    created_at: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def searchable_text(self) -> str:
        """Content, category, tags and keywords joined: what a single-field retriever indexes."""
        parts = [self.content, self.category, " ".join(self.tags), self.expanded_keywords]
        return "\n".join(part for part in parts if part)


@dataclass(frozen=True, slots=True)
class Query:
    """One query. `stratum` groups queries for per-stratum scores; `scope` limits the search."""

    query_id: str
    text: str
    stratum: str = "all"
    scope: str | None = None
    #: The answer the query was written for (LoCoMo's gold answer, a generator's seed fact), when
    #: the evaluation set carries one: what the `answer` judge looks for in a memory.
    answer: str | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved document: its id and the retriever's score (higher is better)."""

    id: DocId
    score: float


#: How scores are compared when ranking: "float32" as trec_eval <= 9 and pytrec_eval, "float64"
#: as trec_eval 10.
TIE_PRECISIONS = ("float32", "float64")


def sort_hits(hits: Sequence[Hit], ties: str = "float32") -> list[Hit]:
    """Order hits best first as trec_eval does: by score descending, ties by document id descending.

    trec_eval up to 9.x and pytrec_eval hold scores as C floats (32 bits), so two scores equal at
    float32 precision tie there; they tie here too (each hit keeps its full score). That is the
    default, ``ties="float32"``. trec_eval 10 holds them as doubles: ``ties="float64"`` compares
    the full scores, so 1.0 and 1.0 + 1e-9 no longer tie. Every ranking recall-kit scores or
    writes is in the float32 order unless asked otherwise, so a run file scores the same in
    recall-kit, trec_eval <= 9 and pytrec_eval (ranx breaks ties its own way: see the user guide).
    """
    if ties not in TIE_PRECISIONS:
        raise ValueError(f"ties must be one of {', '.join(TIE_PRECISIONS)}, got {ties!r}")
    keys = float32_scores(hits) if ties == "float32" else [float(hit.score) for hit in hits]
    # (score, id) descending, one sort; an already ordered list (most are) costs one pass.
    pairs = list(zip(keys, [hit.id for hit in hits]))
    order = sorted(range(len(hits)), key=pairs.__getitem__, reverse=True)
    return [hits[index] for index in order]


def id_ranks(ids: Sequence[DocId]) -> np.ndarray:
    """Each id's position among `ids` sorted ascending (int64, one per id, in the order given):
    the tie key :func:`top_hits` needs, computed once per index."""
    import numpy as np

    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    return ranks


def top_hits(scores: np.ndarray, ids: Sequence[DocId], k: int, id_rank: np.ndarray | None = None,
             candidates: np.ndarray | None = None) -> list[Hit]:
    """The `k` best of `scores` as hits, exactly ``sort_hits([...])[:k]`` (float32 score descending,
    ties by id descending) without a Hit or a Python comparison per candidate.

    `scores` holds one score per id (or, with `candidates`, one per index into `ids` listed
    there); each hit keeps its full score. `id_rank` is :func:`id_ranks` of `ids`, kept with
    an index so it is not recomputed per query. Every candidate tied at float32 precision with
    the k-th is kept until the ids order them, so where a partition happened to cut decides nothing.
    """
    import numpy as np

    rank = id_ranks(ids) if id_rank is None else id_rank
    values = np.asarray(scores)
    rows = np.arange(len(values)) if candidates is None else np.asarray(candidates)
    if k <= 0 or not len(values):
        return []
    with np.errstate(over="ignore"):  # past float32's range: +-inf, as sort_hits keys it
        keys = values.astype(np.float32)
    if len(keys) > k and not np.isnan(kth := np.partition(keys, len(keys) - k)[len(keys) - k]):
        keep = np.flatnonzero(keys >= kth)
        rows, values, keys = rows[keep], values[keep], keys[keep]
    order = np.lexsort((-rank[rows], -keys))[:k]
    return [Hit(ids[row], score) for row, score in zip(rows[order].tolist(), values[order].tolist(), strict=True)]


class FailedSearch(list[Hit]):
    """The answer to a query whose search failed after the retriever's own retries: no hits, and
    why (one line, no query or memory text).

    A retriever that talks to an outside system (a server, another program) returns one in place
    of a ranking when a single query's call fails, times out or comes back unreadable. A failed
    query is not a miss: the run ends with no result (``FailedQueriesError``, naming the query and
    the reason) unless the user accepts some (``--max-failed``), and then they are scored as empty
    rankings and recorded in the result (see ``recall_kit.measure.run.failures``). A failure that
    affects every query (the server is unreachable) is raised instead, as a ``PluginRunError``.
    """

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


def float32_scores(hits: Sequence[Hit]) -> array[float]:
    """The hits' scores at float32 precision (what trec_eval compares); beyond range: +-inf."""
    return array("f", [hit.score for hit in hits])


class Corpus(Sequence[Memory]):
    """An ordered, immutable collection of memories with an id index and a content fingerprint."""

    def __init__(
        self, memories: Sequence[Memory], fingerprint: str | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> None:
        self._memories: tuple[Memory, ...] = tuple(memories)
        #: The host's context expansion these memories' content went through (None: as loaded).
        self.context: dict[str, Any] | None = dict(context) if context else None
        self._by_id: dict[DocId, Memory] = {memory.id: memory for memory in self._memories}
        if len(self._by_id) != len(self._memories):
            raise ValueError("duplicate memory ids in corpus")
        self._fingerprint = fingerprint

    def __len__(self) -> int:
        return len(self._memories)

    def __getitem__(self, index):  # type: ignore[override]
        return self._memories[index]

    def __iter__(self) -> Iterator[Memory]:
        return iter(self._memories)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._by_id

    def holds_all(self, doc_ids: Iterable[DocId]) -> bool:
        """Whether every id is a memory of this corpus."""
        return all(map(self._by_id.__contains__, doc_ids))

    def get(self, doc_id: DocId) -> Memory | None:
        return self._by_id.get(doc_id)

    @property
    def ids(self) -> list[DocId]:
        return [memory.id for memory in self._memories]

    @property
    def fingerprint(self) -> str:
        """sha256 over every memory's fields: retrievers key their on-disk caches with it."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint_memories(self._memories, self.context)
        return self._fingerprint

    def subset(self, predicate: Callable[[Memory], bool]) -> Corpus:
        return Corpus([memory for memory in self._memories if predicate(memory)], context=self.context)


def fingerprint_memories(memories: Sequence[Memory], context: Mapping[str, Any] | None = None) -> str:
    """sha256 over every memory's fields in id order (text included, so any edit changes it), and
    over the context expansion the content went through, when there was one."""
    digest = hashlib.sha256()
    if context:
        digest.update(canonical_json(["context", dict(sorted(context.items()))]))
    for memory in sorted(memories, key=lambda m: m.id):
        digest.update(
            canonical_json(
                [
                    memory.id, memory.content, memory.category, list(memory.tags),
                    memory.expanded_keywords, memory.importance, memory.scope, memory.parent_id,
                    memory.created_at,
                ]
            )
        )
    return digest.hexdigest()


@dataclass(frozen=True)
class NoOptions:
    """The options of a plugin that takes none."""


class Retriever(ABC):
    """A retriever builds an index over a corpus and answers queries with ranked hits.

    Subclasses set `Options` to a dataclass of their options (the host turns `-o name.key=value`
    strings into its field types and rejects unknown keys) and receive an instance in `__init__`.
    """

    Options: ClassVar[type] = NoOptions
    #: One line shown by `recall-kit list retrievers`.
    description: ClassVar[str] = ""
    #: `index_stats` keys whose integers are settings or per-index properties (a vector
    #: dimension, an HNSW `m`, a count of distinct kinds), not counts: with scopes they are kept
    #: when every index agrees and listed when they differ, never summed.
    index_settings: ClassVar[frozenset[str]] = frozenset()
    #: True for a live system that searches a store of its own (a service, a server): an id the
    #: evaluated corpus does not hold is then a measured fact (scored as an unjudged, non-relevant
    #: hit and counted in the result's `outside_corpus`), not a broken contract. False (in-process
    #: retrievers that index only the corpus they are given): such an id ends the run.
    searches_own_store: ClassVar[bool] = False

    def __init__(self, options: Any = None) -> None:
        self.options = options if options is not None else self.Options()

    @abstractmethod
    def build_index(self, corpus: Corpus) -> None:
        """Index `corpus`. Called once before any search."""

    @abstractmethod
    def search(self, query: str, k: int) -> list[Hit]:
        """Return at most `k` hits for `query`, best first. Any string is a valid query."""

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Answer a batch of queries; override with a vectorised path where one exists."""
        return [self.search(query, k) for query in queries]

    def index_size_bytes(self) -> int | None:
        """The index's real size in bytes, or None when the retriever cannot tell."""
        return None

    def index_stats(self) -> dict[str, Any]:
        """Extra aggregate numbers for the result's index section (never text).

        With scopes (one index each) the runner merges them: integers are counts and are summed
        (except the keys named in `index_settings`, kept or listed like names);
        floats are ratios or measurements and are averaged, weighted by ``<stem>_expected`` when
        the stats give a ratio's denominator (``ann_recall_at_k`` by ``ann_recall_expected``), else
        by the queries each scope searched; other values are kept when every scope agrees.
        """
        return {}

    def sensitive_ids(self) -> frozenset[str]:
        """Ids this retriever's hits may carry that are sensitive though the dataset does not name
        them: a live system's own ids for memories it holds that the user flagged (in its id space,
        or by a flag in its listing). Read after `build_index`; every hit on one is counted as a
        sensitive hit, like a hit on an id the dataset marks sensitive. Empty by default."""
        return frozenset()

    def last_wait_ms(self) -> float | None:
        """Milliseconds the last `search` spent waiting on an outside system (a server's answer,
        another process's reply), or None for a retriever that runs in-process.

        The runner reads it after each timed query and reports it apart from the rest of the
        search time (building the request, reading the answer: the client's own overhead).
        """
        return None

    def close(self) -> None:
        """Release files, connections and memory. Called once when the run is over."""


@runtime_checkable
class EmbedsInBatches(Protocol):
    """An optional capability of a retriever that embeds its corpus (the `dense` one): its
    embedding split into independent batches, so a distributed run (`--executor ray`) embeds a
    large corpus as one task per batch (each asking for a GPU where the leg's options put it on
    one) before the leg's search task, which then reads the embeddings from the retriever's cache.

    The host calls `embedding_work` and `store_embeddings` in the driving process, on one
    instance that only plans and stores, and `embed_batch` on a fresh instance in each task.
    Local runs never call them: `build_index` embeds as it always did.
    """

    def embedding_work(self, corpus: Corpus) -> list[Any]:
        """The batches `build_index(corpus)` would embed that its cache does not hold yet, in
        order (picklable values, e.g. lists of texts); an empty list when there is nothing to do
        (a cache hit, or no cache to write to)."""
        ...

    def embed_batch(self, batch: Any) -> Any:
        """One batch's embeddings, exactly as `build_index` computes that part (same splits, same
        calls: the cached matrix equals a local build's bit for bit)."""
        ...

    def store_embeddings(self, corpus: Corpus, embedded: list[Any]) -> None:
        """Write the cache entry for `corpus` from every batch's `embed_batch` result, in the
        order of `embedding_work`; a later `build_index(corpus)`, in any process that reads the
        same cache folder, is then a cache hit."""
        ...


class Fusion(ABC):
    """A fusion strategy: combines the legs' rankings, or re-ranks an already fused ranking.

    A strategy with `combines_legs = True` can stand first in a chain (`--fusion rrf`); one with
    `combines_legs = False` only re-ranks (`--fusion rrf --fusion exact-bonus`), and stands first
    only when there is a single leg.
    """

    Options: ClassVar[type] = NoOptions
    description: ClassVar[str] = ""
    combines_legs: ClassVar[bool] = True

    def __init__(self, options: Any = None) -> None:
        self.options = options if options is not None else self.Options()

    def depth(self, k: int) -> int:
        """How many hits each leg should return for a fused list of `k`."""
        return k

    @abstractmethod
    def fuse(self, request: FusionRequest) -> list[Hit]:
        """Return the fused (or re-ranked) hits, best first; `request.k` is how many are wanted."""

    def diagnose(self, weights: Mapping[str, float], k: int) -> list[str]:
        """Warnings about a configuration that structurally bars a leg from the fused top `k`."""
        return []


@dataclass(frozen=True)
class FusionRequest:
    """Everything a fusion step sees for one query."""

    query: Query
    #: Each leg's hits, best first, keyed by leg name, in the order the legs were given.
    legs: Mapping[str, list[Hit]]
    #: Each leg's weight (1.0 unless `--weights` says otherwise).
    weights: Mapping[str, float]
    #: The ranking so far: None for the first step of a chain, else the previous step's output.
    ranking: list[Hit] | None
    #: The corpus searched, for strategies that read memory fields (text, importance).
    corpus: Corpus
    k: int


@dataclass(frozen=True)
class JudgedRankings:
    """Rankings joined with relevance judgments, as dense arrays, for vectorised metrics.

    Row q is one query; column r is rank r + 1. Cells past the end of a ranking are padding.
    """

    query_ids: list[str]
    #: (Q, D) grade of the document at each rank (0 when not relevant, unjudged or padding).
    grades: np.ndarray
    #: (Q, D) True where the document at that rank has a judgment: a grade >= 0 in the qrels.
    #: A negative grade (trec_eval's -1, "pooled but not judged") is not a judgment.
    judged: np.ndarray
    #: (Q,) how many documents each ranking holds (at most D).
    lengths: np.ndarray
    #: (Q,) number of relevant documents (grade >= `relevance_level`) in the qrels.
    num_relevant: np.ndarray
    #: (Q, R) the qrels' positive grades sorted descending, zero-padded: the ideal ranking's gains
    #: (every grade >= 1, whatever the relevance level, as trec_eval's ndcg).
    ideal_grades: np.ndarray
    #: (Q, D) True where the document at that rank is in the qrels at all, negative grades included
    #: (trec_eval's pool): ``pooled & ~judged`` is pooled but not judged.
    pooled: np.ndarray
    #: (Q,) number of judged non-relevant documents (0 <= grade < `relevance_level`) in the qrels.
    num_judged_nonrelevant: np.ndarray
    #: The lowest grade that counts as relevant for binary measures (trec_eval ``-l``).
    relevance_level: int = 1

    @property
    def relevant(self) -> np.ndarray:
        """(Q, D) True where the document at that rank is relevant (grade >= relevance level)."""
        return self.grades >= self.relevance_level


#: The cutoffs trec_eval computes for P, recall, ndcg_cut, map_cut and relative_P named bare.
TREC_EVAL_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


@dataclass(frozen=True)
class Metric:
    """A metric family, scored per query over `JudgedRankings`.

    `compute(data, cutoff)` returns one float per query. `cutoff` is "required" (`recall@10`),
    "optional" (`mrr` or `mrr@10`) or "none" (`map`).
    """

    name: str
    compute: Callable[[JudgedRankings, int | None], np.ndarray]
    cutoff: str = "required"
    description: str = ""
    #: Whether `--metrics` uses it when the user names none.
    default_cutoffs: tuple[int | None, ...] = ()
    #: Other names users write for it, matched without regard to case: ``"P_{k}"`` (trec_eval),
    #: ``"P@{k}"`` (ir_measures), ``"RR"``. ``{k}``, at the end only, stands for the cutoff.
    aliases: tuple[str, ...] = ()
    #: How per-query values become one number: "mean" (macro average), "sum" for counts such
    #: as trec_eval's num_ret, whose summary line is a total, or "geometric" (trec_eval's gm_map:
    #: the per-query values are natural logs, the summary exp of their mean).
    summary: str = "mean"
    #: A check on the data (judged@k), not a measure of retrieval: compare never tests it.
    diagnostic: bool = False
    #: (lowest, highest) value a query can score, ``(0.0, 1.0)`` for a share, ``(0.0, math.inf)``
    #: for a count; a result file holding a value outside them is refused as corrupt. None: unbounded.
    bounds: tuple[float, float] | None = None
    #: The names trec_eval's ``-m`` gives this measure (``("ndcg", "ndcg_cut")``), for its measure
    #: sets (``-m all_trec``, ``-m official``) and bare families (``-m P``). A name with an alias
    #: ``NAME_{k}``, or on a metric that needs a cutoff, means the measure at `trec_cutoffs`.
    trec_eval: tuple[str, ...] = ()
    #: The cutoffs trec_eval computes when the family is named bare (``-m P``: 5, 10, ..., 1000).
    trec_cutoffs: tuple[int, ...] = ()
    #: What the number after '@' counts: "rank" (the top k, >= 1), or "percent" (0..100: a share
    #: of the relevant documents, ``iprec_at_recall@50`` is trec_eval's iprec_at_recall_0.50).
    cutoff_unit: str = "rank"

    def __post_init__(self) -> None:
        if self.cutoff not in ("required", "optional", "none"):
            raise ValueError(f"metric {self.name!r}: cutoff must be required, optional or none")
        if self.cutoff_unit not in ("rank", "percent"):
            raise ValueError(f"metric {self.name!r}: cutoff_unit must be rank or percent")
        if self.summary not in ("mean", "sum", "geometric"):
            raise ValueError(f"metric {self.name!r}: summary must be mean, sum or geometric")
        if self.bounds is not None and not (
            len(self.bounds) == 2 and all(isinstance(b, (int, float)) for b in self.bounds)
            and self.bounds[0] <= self.bounds[1]
        ):
            raise ValueError(f"metric {self.name!r}: bounds must be (lowest, highest), lowest <= highest")


@dataclass
class ReportTable:
    """One table of a report: a title, column headers, rows of plain values, and notes under it."""

    title: str
    headers: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Chart:
    """One chart for graphical reporters. `kind` "bar": `groups` {group: {series: value}}, with
    optional `intervals` {group: {series: [low, high]}} and `significant` {group: {series: bool}};
    "line": `x` [x values] and `series` {name: [y values]}; "histogram": `series` {name: [numbers]}
    (or `values` [numbers], one series) on `bins` shared bins."""

    kind: str
    title: str = ""
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    intervals: dict[str, dict[str, Any]] = field(default_factory=dict)
    significant: dict[str, dict[str, Any]] = field(default_factory=dict)
    x: list[Any] = field(default_factory=list)
    series: dict[str, list[Any]] = field(default_factory=dict)
    values: list[Any] = field(default_factory=list)
    bins: int = 20
    x_label: str = ""
    y_label: str = ""

    @classmethod
    def of(cls, chart: Chart | Mapping[str, Any]) -> Chart:
        """A Chart from itself or from its dict form (as plugins and older code write charts);
        keys a Chart does not know are ignored."""
        if isinstance(chart, Chart):
            return chart
        known = {name: chart[name] for name in cls.__dataclass_fields__ if chart.get(name) is not None}
        return cls(**{"kind": "", **known})

    @property
    def histogram_series(self) -> dict[str, list[Any]]:
        """A histogram's series: `series`, or `values` as one series named "values"."""
        return self.series or ({"values": self.values} if self.values else {})


@dataclass
class Report:
    """What a command has to show, independent of format; reporters turn it into text.

    `data` is the machine-readable document (for `eval`, the result JSON); `charts` are optional
    series for graphical reporters: each a `Chart` (its dict form is taken too, and made a Chart).
    `summary` leads (the answer in words) and `provenance` says what was measured, so a shared page
    stands on its own.
    """

    title: str
    tables: list[ReportTable] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    charts: Sequence[Chart | Mapping[str, Any]] = field(default_factory=list)
    #: The answer in sentences, shown first ("bm25+dense does not beat bm25 on recall@5: ...").
    summary: list[str] = field(default_factory=list)
    #: What was measured, as (label, value): dataset and fingerprint, versions, date, systems' options.
    provenance: list[tuple[str, str]] = field(default_factory=list)
    #: More of it, folded away on a page (options every compared system shares), as (label, value).
    provenance_details: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.charts = [Chart.of(chart) for chart in self.charts]

    def chart_list(self) -> list[Chart]:
        """The charts, each a Chart."""
        return [Chart.of(chart) for chart in self.charts]


class Reporter(ABC):
    """An output format for reports (`--report NAME`)."""

    description: ClassVar[str] = ""
    #: The commands whose reports it renders (`("score",)`); empty: every command's. A command
    #: offers, and accepts, only the reporters that render its report.
    commands: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def render(self, report: Report) -> str:
        """Return the whole report as text."""


class Importer(ABC):
    """Turns data in some other format into a recall-kit dataset folder."""

    Options: ClassVar[type] = NoOptions
    description: ClassVar[str] = ""

    def __init__(self, options: Any = None) -> None:
        self.options = options if options is not None else self.Options()

    @abstractmethod
    def run(self, source: Path, destination: Path) -> dict[str, Any]:
        """Write corpus.jsonl, queries.jsonl and qrels.jsonl under `destination` from `source`.

        Returns aggregate counts of what was imported and what was dropped and why (never text).
        """


@dataclass(frozen=True)
class GeneratedQuery:
    """One generated query and its judgments.

    :param text: the query text.
    :param relevance: memory id -> grade (1 = relevant; higher grades for graded judgments).
    :param stratum: the query's stratum; None means the generator's own ``stratum``.
    :param scope: the scope the query searches (usually the relevant memory's), or None.
    :param provenance: how it was made (written as ``_``-prefixed, unscored query fields); never
        put memory text here.
    :param answer: the answer the query was made from (the query's ``answer`` field, what the
        ``answer`` judge looks for), or None.
    """

    text: str
    relevance: Mapping[DocId, int]
    stratum: str | None = None
    scope: str | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    answer: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError("a generated query needs non-empty text")
        if not any(grade >= 1 for grade in self.relevance.values()):
            raise ValueError("a generated query needs at least one relevant id (grade >= 1)")


class QueryGenerator(ABC):
    """Makes queries of one stratum from a corpus, with their relevant ids.

    Register a subclass through ``register_query_generators``. ``generate`` is deterministic for
    a given corpus, count and seed, returns at most ``count`` queries (fewer when the corpus
    cannot give more), and never invents ids that are not in the corpus.
    """

    #: The stratum its queries belong to (``exact``, ``paraphrase``, ``multihop``, ...).
    stratum: ClassVar[str] = ""
    #: One line shown in listings and ``--help``.
    description: ClassVar[str] = ""
    #: A frozen dataclass of its options (``-o NAME.KEY=VALUE``).
    Options: ClassVar[type] = NoOptions

    def __init__(self, options: Any = None) -> None:
        self.options = options if options is not None else self.Options()

    @property
    def name(self) -> str:
        """The name it is registered under (set by the host when it builds one)."""
        return getattr(self, "_registered_name", type(self).__name__)

    @abstractmethod
    def generate(self, corpus: Corpus, count: int, seed: int) -> list[GeneratedQuery]:
        """Return at most `count` queries over `corpus`, reproducibly for `seed`."""


@dataclass(frozen=True)
class PairEvidence:
    """What the candidate systems said about one (query, memory) pair: a judge's signals beside
    the texts. Keys are system names (``ranks``, ``scores``) and leg names (``leg_ranks``)."""

    #: System -> the rank (1 = best) it gave the memory; systems that did not return it are absent.
    ranks: Mapping[str, int] = field(default_factory=dict)
    #: System -> its (fused) score for the memory.
    scores: Mapping[str, float] = field(default_factory=dict)
    #: Leg -> the best rank any system's leg of that name gave the memory in its own list.
    leg_ranks: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgingContext:
    """What a judge that learns (``RelevanceJudge.learns``) is given before it grades: labelled
    pairs to fit on, and the systems' evidence about every pair it may be asked about.

    ``labels`` are a person's grades (or a dataset's qrels taken as complete): ``grade >= 1``
    relevant, 0 not. A judge fitted on them must never grade a labelled pair with a model that
    saw that pair's label (cross-fitting)."""

    labels: Qrels
    queries: Mapping[str, Query]
    corpus: Mapping[DocId, Memory]
    #: (query id, memory id) -> what the systems said about it; pairs no system ranked are absent.
    evidence: Mapping[tuple[str, DocId], PairEvidence] = field(default_factory=dict)
    #: The systems (names) the evidence comes from, in a fixed order: a judge's features.
    systems: tuple[str, ...] = ()
    #: The legs (names) the evidence's leg ranks come from, in a fixed order.
    legs: tuple[str, ...] = ()
    #: Seed of anything random in the fit (the folds).
    seed: int = 0


class RelevanceJudge(ABC):
    """Grades (query, memory) pairs of a pool without a person: `recall-kit judge --judge NAME`.

    Register a subclass through ``register_judges``. The host owns the session (which pairs are
    left, the journal, the qrels file written atomically, resuming); the judge only grades.
    """

    #: One line shown in listings and ``--help``.
    description: ClassVar[str] = ""
    #: True for a judge fitted on labelled pairs: the host calls ``fit(context)`` before grading,
    #: and refuses to run it without labels.
    learns: ClassVar[bool] = False
    #: A frozen dataclass of its options (``-o NAME.KEY=VALUE``); ``--model`` and
    #: ``--allow-remote`` fill its ``model`` and ``allow_remote`` fields when it has them.
    Options: ClassVar[type] = NoOptions

    def __init__(self, options: Any = None) -> None:
        self.options = options if options is not None else self.Options()

    def prepare(self) -> None:
        """Check everything a run needs (the model exists, its key is set, it may receive
        memory text) before any file is written; raise a RecallKitError saying what to do."""

    def fit(self, context: JudgingContext) -> None:
        """Learn from ``context.labels`` (a judge with ``learns``; others ignore it). Called once,
        after ``prepare`` and before the first ``grade``; the context stays valid while grading."""

    @abstractmethod
    def grade(self, query: Query, memory: Memory) -> int | None:
        """The grade (0-3: not, partly, relevant, highly relevant) of `memory` for `query`, or
        None when no usable answer came (counted as skipped; asked again in a later run)."""

    def grade_many(self, pairs: Sequence[tuple[Query, Memory]]) -> Iterator[int | None]:
        """The grades of `pairs`, yielded in their order as `grade` gives them; a judge may
        compute them concurrently (the host records each as it is yielded, so what it writes
        does not depend on which answer came first). Default: `grade` one pair at a time."""
        for query, memory in pairs:
            yield self.grade(query, memory)

    def probabilities(self, pairs: Sequence[tuple[Query, Memory]]) -> list[float] | None:
        """The probability that each of `pairs` is relevant (a grade of 1 or more): a real number
        in [0, 1] (a numpy scalar is one; a string or a bool is refused), the same on every CPU,
        where the judge has one (a fitted model's: `combined`); None where it has none (the default). A study's hole-aware intervals take them as their predictor
        (the expected delta over them, which tracks the truth better than a grade cut at one
        threshold); without them, the grades. Called after the pairs were graded."""
        return None

    def provenance(self) -> Mapping[str, Any]:
        """How the grades were made (model, prompt version), written as ``_``-prefixed fields on
        each qrels row; never memory text."""
        return {}
