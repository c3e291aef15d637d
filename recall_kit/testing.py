"""Helpers for testing recall-kit plugins (a pytest plugin: fixtures and a conformance suite).

Installed as the pytest plugin ``recall_kit`` (entry point group ``pytest11``), so a plugin's tests
get these fixtures with no ``conftest.py`` (and the ini option ``recall_kit_isolate_plugins = true``
keeps installed plugins out of a test session):

- ``recall_kit_corpus``: a tiny :class:`SampleCorpus` (12 memories, 6 queries, their qrels);
- ``recall_kit_dataset``: the same data written as a dataset folder, for CLI tests;
- ``recall_kit_plugin``: ``recall_kit_plugin(module)`` registers a plugin for one test.

And a conformance suite for retrievers: subclass :class:`RetrieverConformance` in a test module
named ``Test...`` and set ``retriever_factory``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from recall_kit.dataset import example_datasets
from recall_kit.plugins import forget_plugin_failures, load_plugins, pm
from recall_kit.registry import registries
from recall_kit.types import Corpus, Hit, JudgedRankings, Memory, Qrels, Query, Retriever

__all__ = [
    "ODD_QUERIES",
    "PluginRegistration",
    "RetrieverConformance",
    "SampleCorpus",
    "check_ranking",
    "check_top_k_of",
    "example_datasets",
    "invoke_cli",
    "judge_rankings",
    "registered_plugin",
    "registries",
    "sample_corpus",
    "write_sample_dataset",
    "write_scoped_dataset",
]


# -- pytest hooks ----------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "recall_kit_isolate_plugins",
        "Set RECALL_KIT_LOAD_PLUGINS to empty (unless the environment sets it) so tests see only "
        "recall-kit's built-ins and the plugins they register themselves.",
        type="bool",
        default=False,
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getini("recall_kit_isolate_plugins"):
        os.environ.setdefault("RECALL_KIT_LOAD_PLUGINS", "")


# -- registering plugins ---------------------------------------------------------------------------


class PluginRegistration:
    """A plugin registered with the plugin manager until :meth:`unregister` (or the block) ends.

    A plugin that is already registered (for example loaded from its entry point because it is
    installed) is left as it is: it is neither registered twice nor unregistered here.
    """

    def __init__(self, plugin: Any, name: str | None = None) -> None:
        load_plugins()
        self.plugin = plugin
        self._name: str | None = None
        if not pm.is_registered(plugin):
            self._name = pm.register(plugin, name=name)

    def unregister(self) -> None:
        """Remove the plugin again (idempotent)."""
        if self._name is not None:
            pm.unregister(name=self._name)
            forget_plugin_failures(self._name)
            self._name = None

    def __enter__(self) -> Any:
        return self.plugin

    def __exit__(self, *exc_info: object) -> None:
        self.unregister()


@contextmanager
def registered_plugin(plugin: Any, name: str | None = None) -> Iterator[Any]:
    """Register `plugin` (a module or an object with hook implementations) for the block's duration."""
    registration = PluginRegistration(plugin, name)
    try:
        yield plugin
    finally:
        registration.unregister()


def invoke_cli(args: Sequence[str], plugin_commands: bool = False) -> Any:
    """Run ``recall-kit ARGS`` in this process (typer's ``CliRunner``), so plugins a test registered
    are seen; returns click's ``Result`` (``exit_code``, ``output``). With `plugin_commands`, the
    commands plugins add (`register_commands`: `remote probe`) are there too, as on the command line."""
    from typer.testing import CliRunner

    from recall_kit.cli import app, app_with_plugin_commands

    return CliRunner().invoke(app_with_plugin_commands() if plugin_commands else app, list(args))


def judge_rankings(query_ids: Sequence[str], rankings: Sequence[Sequence[str]], qrels: Qrels) -> JudgedRankings:
    """The :class:`JudgedRankings` a metric's ``compute`` receives, for `rankings` (ids best first,
    one list per query id) judged by `qrels`: how a metric plugin's test builds its input."""
    from recall_kit.measure.score.join import judge_rankings as judge

    return judge(list(query_ids), [list(ranking) for ranking in rankings], qrels)


@pytest.fixture
def recall_kit_plugin() -> Iterator[Callable[..., PluginRegistration]]:
    """A factory: ``recall_kit_plugin(module_or_object, name=None)`` registers a plugin.

    It stays registered until the test ends, or until the ``with`` block ends when the returned
    registration is used as a context manager (``with recall_kit_plugin(mod) as plugin: ...``).
    """
    registrations: list[PluginRegistration] = []

    def register(plugin: Any, name: str | None = None) -> PluginRegistration:
        registration = PluginRegistration(plugin, name)
        registrations.append(registration)
        return registration

    try:
        yield register
    finally:
        for registration in reversed(registrations):
            registration.unregister()


# -- a tiny corpus ---------------------------------------------------------------------------------

_MEMORIES: tuple[dict[str, Any], ...] = (
    {"id": "1", "content": "Kestrel stores click events in ClickHouse, partitioned by day.",
     "category": "architecture", "tags": ("kestrel", "storage")},
    {"id": "2", "content": "Priya Raman leads the Kestrel analytics project.",
     "category": "person", "tags": ("kestrel", "people")},
    {"id": "3", "content": "Flat white with oat milk before nine, no sugar.",
     "category": "preference", "tags": ("drinks",), "expanded_keywords": "cafe habit"},
    {"id": "4", "content": "Rotate the Driftwood API keys every quarter.",
     "category": "runbook", "tags": ("driftwood", "security")},
    {"id": "5", "content": "Driftwood deploys go out on Fridays after the three o'clock freeze ends.",
     "category": "runbook", "tags": ("driftwood",)},
    {"id": "6", "content": "The on-call rotation hands over on Monday at 10:00 UTC.",
     "category": "process", "tags": ("oncall",)},
    {"id": "7", "content": "Backups of the Postgres cluster are kept for thirty days.",
     "category": "runbook", "tags": ("postgres", "backups")},
    {"id": "8", "content": "Marco is allergic to peanuts; order the vegan platter for team lunches.",
     "category": "person", "tags": ("people", "food")},
    {"id": "9", "content": "The staging database password lives in the team vault, never in chat.",
     "category": "security", "tags": ("security",)},
    {"id": "10", "content": "Sofia prefers code reviews in the morning and asynchronous stand-ups.",
     "category": "person", "tags": ("people",)},
    {"id": "11", "content": "Kestrel dashboards are built with Grafana on top of ClickHouse.",
     "category": "architecture", "tags": ("kestrel", "dashboards")},
    {"id": "12", "content": "The quarterly planning offsite is in Lisbon in October.",
     "category": "event", "tags": ("travel",), "importance": 0.4},
)

_QUERIES: tuple[Query, ...] = (
    Query("exact_keys", "rotate the Driftwood API keys", "exact"),
    Query("exact_backups", "how long are Postgres backups kept", "exact"),
    Query("para_coffee", "what does my morning coffee order look like", "paraphrase"),
    Query("para_allergy", "who cannot eat nuts at lunch", "paraphrase"),
    Query("multi_db", "which database does Priya's project use", "multihop"),
    Query("multi_deploy", "when can Driftwood ship changes", "multihop"),
)

_QRELS: Qrels = {
    "exact_keys": {"4": 1},
    "exact_backups": {"7": 1},
    "para_coffee": {"3": 1},
    "para_allergy": {"8": 1},
    "multi_db": {"1": 2, "2": 1, "11": 1},
    "multi_deploy": {"5": 1, "4": 0},
}


class SampleCorpus(Corpus):
    """A :class:`Corpus` that also carries its queries and relevance judgments."""

    def __init__(self, memories: Sequence[Memory], queries: Sequence[Query], qrels: Qrels) -> None:
        super().__init__(memories)
        self.queries: list[Query] = list(queries)
        self.qrels: Qrels = {qid: dict(judgments) for qid, judgments in qrels.items()}


def sample_corpus() -> SampleCorpus:
    """12 memories about a small engineering team, 6 queries (exact, paraphrase, multihop), qrels.

    Ids are the strings "1" to "12", so "10" sorts before "2": a retriever that mixes up numeric
    and string ids shows it here.
    """
    memories = [Memory(**row) for row in _MEMORIES]
    return SampleCorpus(memories, _QUERIES, _QRELS)


def write_sample_dataset(folder: Path) -> Path:
    """Write :func:`sample_corpus` as a dataset folder (corpus, queries, qrels JSONL); return it."""
    corpus = sample_corpus()
    folder.mkdir(parents=True, exist_ok=True)
    rows = {
        "corpus": [
            {**row, "tags": ",".join(row.get("tags", ()))} for row in _MEMORIES
        ],
        "queries": [
            {"query_id": q.query_id, "text": q.text, "stratum": q.stratum} for q in corpus.queries
        ],
        "qrels": [
            {"query_id": qid, "relevance": judgments} for qid, judgments in corpus.qrels.items()
        ],
    }
    for name, lines in rows.items():
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        (folder / f"{name}.jsonl").write_text(text, encoding="utf-8")
    return folder


#: Two scopes with the same question asked in each: a retriever that ignores scopes shows it.
_SCOPED_ROWS: dict[str, list[dict[str, Any]]] = {
    "corpus": [{"id": "a1", "content": "Alice keeps bees in the garden", "scope": "alice"},
               {"id": "a2", "content": "Alice keeps a blue car", "scope": "alice"},
               {"id": "b1", "content": "Bob keeps bees on the roof", "scope": "bob"}],
    "queries": [{"query_id": "qa", "text": "who keeps bees", "scope": "alice"},
                {"query_id": "qb", "text": "who keeps bees", "scope": "bob"}],
    "qrels": [{"query_id": "qa", "relevant_ids": ["a1"]}, {"query_id": "qb", "relevant_ids": ["b1"]}],
}


def write_scoped_dataset(folder: Path) -> Path:
    """Write a three-memory dataset in two scopes (alice: a1, a2; bob: b1), the query "who keeps
    bees" asked in each (qa relevant a1, qb relevant b1); return the folder. A retriever that
    searches only the query's scope answers qb with b1 alone."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in _SCOPED_ROWS.items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return folder


@pytest.fixture
def recall_kit_corpus() -> SampleCorpus:
    """A fresh :func:`sample_corpus`: 12 memories with ``.queries`` and ``.qrels``."""
    return sample_corpus()


@pytest.fixture
def recall_kit_dataset(tmp_path: Path) -> Path:
    """The sample corpus written as a dataset folder under ``tmp_path``."""
    return write_sample_dataset(tmp_path / "recall-kit-sample")


# -- the retriever conformance suite ---------------------------------------------------------------

#: Queries any retriever must survive: (test id, query text).
ODD_QUERIES: tuple[tuple[str, str], ...] = (
    ("empty", ""),
    ("whitespace", "  \t \n "),
    ("double-quote", '"'),
    ("unbalanced-quotes", 'he said "kestrel'),
    ("apostrophe", "Priya's o'clock"),
    ("fts-operators", 'kestrel AND OR NOT "driftwood" NEAR(a b)'),
    ("fts-syntax", "title:kestrel* ^driftwood -postgres +x {a b} [c] (d"),
    ("only-punctuation", "?!.,;:()*-+^~@#$%&|\\/<>="),
    ("sql", "'; DROP TABLE memories; --"),
    ("emoji", "🧠🔥 kestrel 👩‍💻 ☕"),
    ("non-latin", "Кестрел 東京 عربى ελληνικά"),
    ("combining", "cafe\u0301 nai\u0308ve"),
    ("control-chars", "\x00kestrel\x01\x1b[31m\x7f\r\nclickhouse\x0b\x0c"),
    ("10000-chars", ("kestrel driftwood clickhouse postgres backups " * 300)[:10_000]),
    ("10000-char-token", "x" * 10_000),
)

#: A query no sample memory shares a word with.
NO_MATCH_QUERY = "zzyzx plimth wuggle quorble"


def check_ranking(hits: Any, k: int, corpus_ids: set[str], what: str = "search") -> None:
    """Assert that `hits` obeys the retriever contract: a list of at most `k` hits with corpus
    ids, no id twice, finite scores that never increase (best first)."""
    assert isinstance(hits, list), f"{what} returned {type(hits).__name__}, expected a list of Hit"
    assert len(hits) <= k, f"{what} returned {len(hits)} hits for k={k}"
    previous = math.inf
    seen: set[str] = set()
    for rank, hit in enumerate(hits, start=1):
        assert isinstance(hit, Hit), f"{what}: rank {rank} is a {type(hit).__name__}, expected a Hit"
        assert isinstance(hit.id, str), (
            f"{what}: rank {rank} has id {hit.id!r} of type {type(hit.id).__name__}; ids are str"
        )
        assert hit.id in corpus_ids, f"{what}: rank {rank} has id {hit.id!r}, not in the corpus"
        assert hit.id not in seen, f"{what}: id {hit.id!r} appears twice"
        seen.add(hit.id)
        score = hit.score
        assert isinstance(score, (int, float)) and not isinstance(score, bool), (
            f"{what}: rank {rank} has a score of type {type(score).__name__}, expected float"
        )
        assert math.isfinite(score), f"{what}: rank {rank} has a non-finite score {score!r}"
        assert score <= previous, (
            f"{what}: scores increase at rank {rank} ({previous!r} then {score!r}); best first"
        )
        previous = score


def check_top_k_of(hits: list[Hit], reference: list[Hit], k: int, rel_tol: float = 1e-9,
                   what: str = "search") -> None:
    """Assert that `hits` is a top `k` of the complete ranking `reference` (every hit it would
    return, best first), with near-ties in either order, as the retriever contract allows: two
    code paths may add a score's terms in another order, so scores equal to within `rel_tol` may
    swap places, also across the cut at `k`. Each hit's score must be within `rel_tol` of its own
    score in `reference`, and the scores at each rank must agree with `reference`'s to within
    `rel_tol`: a real difference of ranking still fails."""
    expected = reference[:k]
    assert len(hits) == len(expected), (
        f"{what}: {len(hits)} hits, expected {len(expected)} ({[h.id for h in expected]})"
    )
    scores = {hit.id: hit.score for hit in reference}
    assert len({hit.id for hit in hits}) == len(hits), f"{what}: an id appears twice"
    for rank, (hit, wanted) in enumerate(zip(hits, expected, strict=True), start=1):
        assert hit.id in scores, f"{what}: rank {rank} is id {hit.id!r}, which the reference never returns"
        assert math.isclose(hit.score, scores[hit.id], rel_tol=rel_tol, abs_tol=1e-12), (
            f"{what}: id {hit.id!r} scored {hit.score!r}, the reference {scores[hit.id]!r}"
        )
        assert math.isclose(scores[hit.id], wanted.score, rel_tol=rel_tol, abs_tol=1e-12), (
            f"{what}: rank {rank} is id {hit.id!r} ({scores[hit.id]!r}); the reference ranks "
            f"{wanted.id!r} ({wanted.score!r}) there, not a near-tie"
        )


def _same_ranking(left: list[Hit], right: list[Hit], rel_tol: float, what: str) -> None:
    assert [hit.id for hit in left] == [hit.id for hit in right], (
        f"{what}: ids differ: {[h.id for h in left]} != {[h.id for h in right]}"
    )
    for a, b in zip(left, right, strict=True):
        assert math.isclose(a.score, b.score, rel_tol=rel_tol, abs_tol=1e-9), (
            f"{what}: scores of id {a.id!r} differ: {a.score!r} != {b.score!r}"
        )


def _adapt(obj: Any) -> Retriever:
    """The retriever as the runner sees it: plain objects and callables go through the adapters."""
    if isinstance(obj, Retriever):
        return obj
    from recall_kit.measure.systems.adapters import CallableAdapter, ObjectAdapter

    if hasattr(obj, "search") or hasattr(obj, "retrieve"):
        return ObjectAdapter(obj)
    if callable(obj):
        return CallableAdapter(obj)
    raise TypeError(f"retriever_factory returned {type(obj).__name__}, not a retriever")


class RetrieverConformance:
    """The checks every retriever should pass. Subclass it in a test module as ``Test...``::

        from recall_kit.testing import RetrieverConformance
        from recall_kit_mine import MyRetriever

        class TestMyRetrieverConformance(RetrieverConformance):
            retriever_factory = MyRetriever                       # or a lambda / function

    ``retriever_factory`` returns a fresh retriever: a :class:`recall_kit.Retriever`, or a plain
    object or callable the runner can adapt. The suite builds it over ``conformance_corpus()``
    (the sample corpus unless overridden); set ``build_index_in_suite = False`` when the factory
    returns a retriever already built over that corpus, and ``searches_own_store = True`` when
    the system searches a store of its own (a server that already holds the memories), whatever
    corpus it is handed: the empty and one-memory corpus checks then do not apply.
    """

    #: A callable returning a fresh retriever (a class, a function, a lambda, a partial).
    retriever_factory: Any = None
    #: Whether the suite calls ``build_index(conformance_corpus())`` on each fresh retriever.
    build_index_in_suite: bool = True
    #: Whether the system searches a store of its own rather than the corpus it is handed.
    searches_own_store: bool = False
    #: Relative tolerance when comparing scores of two runs, or of search and search_many.
    score_rel_tolerance: float = 1e-6
    #: The depths checked on the sample queries.
    depths: tuple[int, ...] = (1, 3, 5, 10)

    # -- what a subclass may override --

    def conformance_corpus(self) -> Corpus:
        """The corpus the retriever is built over (default: :func:`sample_corpus`)."""
        return sample_corpus()

    def conformance_queries(self) -> list[str]:
        """Ordinary queries (default: the sample corpus's queries, plus a no-match query)."""
        corpus = self.conformance_corpus()
        queries = getattr(corpus, "queries", None) or list(_QUERIES)
        return [query.text for query in queries] + [NO_MATCH_QUERY]

    # -- machinery --

    def _factory(self) -> Callable[[], Any]:
        # Read the attribute from the class dict so a plain function is not bound as a method.
        for klass in type(self).__mro__:
            if "retriever_factory" in vars(klass):
                factory = vars(klass)["retriever_factory"]
                break
        else:  # pragma: no cover - the base class defines it
            factory = None
        if isinstance(factory, (staticmethod, classmethod)):
            factory = factory.__get__(None, type(self))
        if factory is None:
            pytest.fail(f"{type(self).__name__} must set retriever_factory", pytrace=False)
        return factory

    def make_retriever(self, corpus: Corpus) -> Retriever:
        """A fresh retriever from ``retriever_factory``, adapted, and built over `corpus`."""
        retriever = _adapt(self._factory()())
        if self.build_index_in_suite:
            retriever.build_index(corpus)
        return retriever

    @pytest.fixture(scope="class")
    @classmethod
    def conformance_built(cls) -> Iterator[tuple[Retriever, Corpus]]:
        """One retriever built for the whole class (the checks that do not need a fresh one)."""
        suite = cls()
        corpus = suite.conformance_corpus()
        retriever = suite.make_retriever(corpus)
        try:
            yield retriever, corpus
        finally:
            retriever.close()

    # -- the checks --

    def test_search_returns_corpus_ids_best_first_at_most_k(
        self, conformance_built: tuple[Retriever, Corpus]
    ) -> None:
        retriever, corpus = conformance_built
        ids = set(corpus.ids)
        found = 0
        for number, query in enumerate(self.conformance_queries()):
            for k in self.depths:
                hits = retriever.search(query, k)
                check_ranking(hits, k, ids, f"search(query #{number}, k={k})")
                found += len(hits)
        assert found > 0, "search returned no hits for any query at any k: nothing was checked"

    def test_k_one(self, conformance_built: tuple[Retriever, Corpus]) -> None:
        retriever, corpus = conformance_built
        for number, query in enumerate(self.conformance_queries()):
            check_ranking(retriever.search(query, 1), 1, set(corpus.ids), f"search(query #{number}, k=1)")

    def test_k_larger_than_corpus(self, conformance_built: tuple[Retriever, Corpus]) -> None:
        retriever, corpus = conformance_built
        k = len(corpus) + 25
        for number, query in enumerate(self.conformance_queries()):
            hits = retriever.search(query, k)
            check_ranking(hits, len(corpus), set(corpus.ids), f"search(query #{number}, k={k})")

    @pytest.mark.parametrize(
        "odd_query", [text for _, text in ODD_QUERIES], ids=[name for name, _ in ODD_QUERIES]
    )
    def test_odd_query_survives(
        self, conformance_built: tuple[Retriever, Corpus], odd_query: str
    ) -> None:
        retriever, corpus = conformance_built
        for k in (1, 10):
            check_ranking(retriever.search(odd_query, k), k, set(corpus.ids), f"search(odd, k={k})")

    def test_no_matching_word_returns_a_list(
        self, conformance_built: tuple[Retriever, Corpus]
    ) -> None:
        retriever, corpus = conformance_built
        check_ranking(retriever.search(NO_MATCH_QUERY, 10), 10, set(corpus.ids), "search(no match)")

    def test_deterministic_across_instances(self) -> None:
        corpus = self.conformance_corpus()
        queries = self.conformance_queries() + [text for _, text in ODD_QUERIES[:6]]
        first = self.make_retriever(corpus)
        try:
            answers = [first.search(query, 10) for query in queries]
        finally:
            first.close()
        second = self.make_retriever(corpus)
        try:
            for number, (query, expected) in enumerate(zip(queries, answers, strict=True)):
                _same_ranking(second.search(query, 10), expected, self.score_rel_tolerance,
                              f"query #{number}, second fresh instance")
        finally:
            second.close()

    def test_index_size_bytes(self, conformance_built: tuple[Retriever, Corpus]) -> None:
        retriever, _ = conformance_built
        size = retriever.index_size_bytes()
        assert size is None or (isinstance(size, int) and not isinstance(size, bool) and size > 0), (
            f"index_size_bytes() returned {size!r}; expected None or a positive int"
        )

    def test_search_many_agrees_with_search(
        self, conformance_built: tuple[Retriever, Corpus]
    ) -> None:
        retriever, corpus = conformance_built
        queries = self.conformance_queries() + ["", ODD_QUERIES[5][1]]
        for k in (1, 5):
            batch = retriever.search_many(queries, k)
            assert isinstance(batch, list) and len(batch) == len(queries), (
                f"search_many returned {len(batch) if isinstance(batch, list) else type(batch).__name__}"
                f" answers for {len(queries)} queries"
            )
            for number, (query, hits) in enumerate(zip(queries, batch, strict=True)):
                check_ranking(hits, k, set(corpus.ids), f"search_many(query #{number}, k={k})")
                _same_ranking(hits, retriever.search(query, k), self.score_rel_tolerance,
                              f"search_many vs search, query #{number}, k={k}")

    def test_empty_corpus(self) -> None:
        """An empty corpus (a scope a query names may hold no memories): building does not raise
        and every search returns []."""
        _small_corpus_checks(self, [])

    def test_one_memory_corpus(self) -> None:
        """A one-memory corpus (a one-memory scope): at most that memory comes back, at k = 1 and 5."""
        _small_corpus_checks(self, [self.conformance_corpus()[0]])



def _small_corpus_checks(suite: RetrieverConformance, memories: Sequence[Memory]) -> None:
    """Build a fresh retriever over `memories` (none, or one); every search returns only them."""
    if not suite.build_index_in_suite:
        pytest.skip("the factory returns a retriever already built (build_index_in_suite = False)")
    if suite.searches_own_store:
        pytest.skip("the system searches a store of its own, not the corpus it is handed (searches_own_store = True)")
    corpus = Corpus(memories)
    retriever = _adapt(suite._factory()())
    try:
        retriever.build_index(corpus)
        queries = suite.conformance_queries()[:3]  # ordinary ones: odd queries have checks of their own
        for number, query in enumerate(queries):
            for k in (1, 5):
                hits = retriever.search(query, k)
                check_ranking(hits, k, set(corpus.ids), f"{len(corpus)}-memory corpus, query #{number}, k={k}")
        batch = retriever.search_many(queries, 5)
        assert isinstance(batch, list) and len(batch) == len(queries), (
            f"search_many over a {len(corpus)}-memory corpus returned the wrong number of answers")
        for number, hits in enumerate(batch):
            check_ranking(hits, 5, set(corpus.ids), f"search_many, {len(corpus)}-memory corpus, query #{number}")
    finally:
        retriever.close()

