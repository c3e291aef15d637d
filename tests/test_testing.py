"""recall_kit.testing: the pytest plugin's fixtures, and the conformance suite catching real faults.

The suite is run as a real pytest session (a subprocess, with recall_kit.testing loaded through its
`pytest11` entry point) over retrievers that are right and retrievers broken on purpose; each
broken one must fail exactly the checks it breaks.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest
import typer
from typer.testing import CliRunner

from recall_kit import Fusion, Hit, Importer, Metric, Reporter, hookimpl, load_dataset, registry
from recall_kit.plugins import pm
from recall_kit.testing import (
    ODD_QUERIES,
    PluginRegistration,
    RetrieverConformance,
    check_ranking,
    check_top_k_of,
    registered_plugin,
    sample_corpus,
)


class _Plugin:
    """Registers a retriever class under a name, as a third-party plugin would."""

    def __init__(self, name: str) -> None:
        self.name = name

    @hookimpl
    def register_retrievers(self, register):  # type: ignore[no-untyped-def]
        from recall_kit.measure.systems.adapters import CallableAdapter

        register(self.name, CallableAdapter)


def test_pytest11_entry_point_points_at_this_module():
    entry_points = importlib.metadata.entry_points(group="pytest11")
    assert any(ep.value == "recall_kit.testing" for ep in entry_points)


def test_sample_corpus_is_consistent(recall_kit_corpus):
    assert len(recall_kit_corpus) == 12
    assert recall_kit_corpus.ids == [str(n) for n in range(1, 13)]
    assert {q.stratum for q in recall_kit_corpus.queries} == {"exact", "paraphrase", "multihop"}
    assert set(recall_kit_corpus.qrels) == {q.query_id for q in recall_kit_corpus.queries}
    judged = {doc for judgments in recall_kit_corpus.qrels.values() for doc in judgments}
    assert judged <= set(recall_kit_corpus.ids)
    # Every query has at least one relevant memory (grade >= 1).
    assert all(max(j.values()) >= 1 for j in recall_kit_corpus.qrels.values())
    # A fresh copy per call: a test that mutates its qrels does not leak into the next.
    recall_kit_corpus.qrels["exact_keys"]["9"] = 1
    assert "9" not in sample_corpus().qrels["exact_keys"]


def test_sample_dataset_loads_as_the_same_data(recall_kit_dataset):
    dataset = load_dataset(recall_kit_dataset)
    corpus = sample_corpus()
    assert dataset.corpus.ids == corpus.ids
    assert [m.content for m in dataset.corpus] == [m.content for m in corpus]
    assert [m.tags for m in dataset.corpus] == [m.tags for m in corpus]
    assert [(q.query_id, q.text, q.stratum) for q in dataset.queries] == [
        (q.query_id, q.text, q.stratum) for q in corpus.queries
    ]
    assert dataset.qrels == corpus.qrels


def test_recall_kit_plugin_registers_for_the_test_and_as_a_context_manager(recall_kit_plugin):
    assert "fixture-made" not in registry.retrievers.names()
    recall_kit_plugin(_Plugin("fixture-made"))
    assert "fixture-made" in registry.retrievers.names()
    with recall_kit_plugin(_Plugin("block-made")) as plugin:
        assert isinstance(plugin, _Plugin)
        assert "block-made" in registry.retrievers.names()
    assert "block-made" not in registry.retrievers.names()
    assert "fixture-made" in registry.retrievers.names()


class _Kinds:
    """A third-party plugin implementing every registration hook and register_commands."""

    class Fusion(Fusion):
        def fuse(self, request):  # type: ignore[no-untyped-def]
            return next(iter(request.legs.values()))[: request.k]

    class Reporter(Reporter):
        def render(self, report):  # type: ignore[no-untyped-def]
            return report.title

    class Importer(Importer):
        def run(self, source, destination):  # type: ignore[no-untyped-def]
            return {}

    @hookimpl
    def register_fusions(self, register):  # type: ignore[no-untyped-def]
        register("kinds-fusion", self.Fusion)

    @hookimpl
    def register_reporters(self, register):  # type: ignore[no-untyped-def]
        register("kinds-reporter", self.Reporter)

    @hookimpl
    def register_importers(self, register):  # type: ignore[no-untyped-def]
        register("kinds-importer", self.Importer)

    @hookimpl
    def register_metrics(self, register):  # type: ignore[no-untyped-def]
        register("kinds-metric", Metric("kinds-metric", lambda data, cutoff: data.lengths * 1.0, "none"))

    @hookimpl
    def register_commands(self, app):  # type: ignore[no-untyped-def]
        @app.command("kinds-hello")
        def hello(name: str) -> None:
            print(f"hello {name}")


@pytest.mark.parametrize(
    ("kind", "name"),
    [("fusions", "kinds-fusion"), ("reporters", "kinds-reporter"), ("importers", "kinds-importer"),
     ("metrics", "kinds-metric")],
)
def test_recall_kit_plugin_serves_every_registration_hook(recall_kit_plugin, kind, name):
    assert name not in registry.REGISTRIES[kind].names()
    plugin = _Kinds()
    recall_kit_plugin(plugin, name="kinds")
    registration = registry.REGISTRIES[kind].get(name)
    assert registration.plugin == "kinds"
    if kind == "metrics":
        assert registration.obj.name == name
    else:
        assert registration.obj is getattr(_Kinds, kind[:-1].capitalize())


def test_recall_kit_plugin_serves_register_commands(recall_kit_plugin):
    recall_kit_plugin(_Kinds(), name="kinds")
    application = typer.Typer()

    @application.callback()
    def root() -> None:
        """A fresh app, as recall_kit.cli.get_app passes its own."""

    pm.hook.register_commands(app=application)
    result = CliRunner().invoke(application, ["kinds-hello", "Ada"])
    assert result.exit_code == 0 and result.output == "hello Ada\n"


def test_registered_plugin_leaves_an_already_registered_plugin_alone():
    plugin = _Plugin("twice")
    with registered_plugin(plugin, name="outer-twice"):
        with registered_plugin(plugin, name="inner-twice"):  # already there: not registered again
            assert pm.get_plugin("inner-twice") is None
        assert pm.get_plugin("outer-twice") is plugin  # the inner block did not unregister it
    assert not pm.is_registered(plugin)


def test_plugin_registration_unregister_is_idempotent():
    registration = PluginRegistration(_Plugin("idem"), name="idem-plugin")
    assert "idem" in registry.retrievers.names()
    registration.unregister()
    registration.unregister()
    assert "idem" not in registry.retrievers.names()


@pytest.mark.parametrize(
    ("hits", "k", "message"),
    [
        ((Hit("1", 1.0),), 5, "returned tuple"),
        ([Hit("1", 1.0), Hit("2", 0.5)], 1, "returned 2 hits for k=1"),
        ([Hit("99", 1.0)], 5, "not in the corpus"),
        ([Hit("1", 1.0), Hit("1", 0.5)], 5, "appears twice"),
        ([Hit("1", 0.5), Hit("2", 1.0)], 5, "scores increase"),
        ([Hit("1", float("nan"))], 5, "non-finite"),
        ([Hit("1", float("inf"))], 5, "non-finite"),
        ([Hit(1, 1.0)], 5, "ids are str"),  # type: ignore[arg-type]
        ([("1", 1.0)], 5, "expected a Hit"),
        ([Hit("1", True)], 5, "expected float"),
    ],
)
def test_check_ranking_names_each_fault(hits, k, message):
    with pytest.raises(AssertionError, match=message):
        check_ranking(hits, k, {"1", "2"})


def test_check_ranking_accepts_a_good_ranking_and_ties():
    check_ranking([Hit("2", 1.0), Hit("1", 1.0), Hit("3", -2.0)], 3, {"1", "2", "3"})
    check_ranking([], 1, {"1"})


def test_odd_queries_cover_what_the_contract_promises():
    texts = dict(ODD_QUERIES)
    assert texts["empty"] == ""
    assert len(texts["10000-chars"]) == 10_000 and len(texts["10000-char-token"]) == 10_000
    assert any(ord(c) < 32 for c in texts["control-chars"]) and "\x00" in texts["control-chars"]
    assert any(ord(c) > 0xFFFF for c in texts["emoji"])
    assert '"' in texts["unbalanced-quotes"] and "NEAR(" in texts["fts-operators"]


SUITE = '''
import random

from recall_kit import Hit, Retriever, registry, sort_hits
from recall_kit.testing import RetrieverConformance


def words(text):
    return set("".join(c if c.isalnum() else " " for c in text.casefold()).split())


class Overlap(Retriever):
    """A correct retriever: the share of the query's words a memory holds."""

    def build_index(self, corpus):
        self.index = [(m.id, words(m.searchable_text)) for m in corpus]

    def score(self, terms, doc_words):
        return len(terms & doc_words) / len(terms)

    def search(self, query, k):
        terms = words(query)
        if not terms:
            return []
        hits = [Hit(i, self.score(terms, w)) for i, w in self.index if terms & w]
        return sort_hits(hits)[:k]

    def index_size_bytes(self):
        return sum(len(w) for _, ws in self.index for w in ws)


class PlainObject:
    """No recall_kit base class: build_index and retrieve(query, k) -> ids (the runner adapts it)."""

    def build_index(self, corpus):
        self.inner = Overlap()
        self.inner.build_index(corpus)

    def retrieve(self, query, k):
        return [hit.id for hit in self.inner.search(query, k)]


class ZeroSize(Overlap):
    def index_size_bytes(self):
        return 0


class Flaky(Overlap):
    def build_index(self, corpus):
        super().build_index(corpus)
        self.noise = random.Random(id(self)).random() + 0.5

    def score(self, terms, doc_words):
        return super().score(terms, doc_words) * self.noise


class BatchDropsLast(Overlap):
    def search_many(self, queries, k):
        return [self.search(q, k)[:-1] for q in queries]


class CrashesOnEmpty(Overlap):
    def search(self, query, k):
        if query == "":
            raise ValueError("fts5: syntax error near end of input")
        return super().search(query, k)


class NeverFinds(Overlap):
    def search(self, query, k):
        return []


class IgnoresK(Overlap):
    def search(self, query, k):
        return super().search(query, 1000)


class WorstFirst(Overlap):
    def search(self, query, k):
        return list(reversed(super().search(query, k)))


class ForeignIds(Overlap):
    def search(self, query, k):
        return [Hit("not-a-memory", 1.0)] + super().search(query, k - 1) if k > 1 and words(query) else super().search(query, k)


class TestGood(RetrieverConformance):
    retriever_factory = Overlap

class TestGoodLambda(RetrieverConformance):
    retriever_factory = lambda: Overlap()  # noqa: E731 - a plain function must not bind as a method

class TestGoodPlainObject(RetrieverConformance):
    retriever_factory = PlainObject

class TestZeroSize(RetrieverConformance):
    retriever_factory = ZeroSize

class TestFlaky(RetrieverConformance):
    retriever_factory = Flaky

class TestBatchDropsLast(RetrieverConformance):
    retriever_factory = BatchDropsLast

class TestCrashesOnEmpty(RetrieverConformance):
    retriever_factory = CrashesOnEmpty

class TestNeverFinds(RetrieverConformance):
    retriever_factory = NeverFinds

class TestIgnoresK(RetrieverConformance):
    retriever_factory = IgnoresK

class TestWorstFirst(RetrieverConformance):
    retriever_factory = WorstFirst

class TestForeignIds(RetrieverConformance):
    retriever_factory = ForeignIds

class TestNoFactory(RetrieverConformance):
    pass


class Mine:
    from recall_kit import hookimpl

    @hookimpl
    def register_retrievers(self, register):
        register("mine-suite", Overlap)


def test_fixture_registers_for_one_test(recall_kit_plugin):
    recall_kit_plugin(Mine())
    assert registry.retrievers.get("mine-suite").obj is Overlap


def test_and_unregisters_after_it():
    assert "mine-suite" not in registry.retrievers.names()
'''


@pytest.fixture(scope="module")
def suite_outcomes(tmp_path_factory) -> dict[str, dict[str, str]]:
    """Run SUITE in a real pytest session; return {class: {test: "passed" or failure message}}."""
    folder = tmp_path_factory.mktemp("conformance-suite")
    (folder / "test_conformance_suite_cases.py").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    report = folder / "report.xml"
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=importlib",
         "--rootdir", str(folder), f"--junitxml={report}", str(folder)],
        cwd=folder, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "RECALL_KIT_LOAD_PLUGINS": ""},
    )
    assert report.exists(), completed.stdout[-3000:] + completed.stderr[-3000:]
    outcomes: dict[str, dict[str, str]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        klass = case.get("classname", "").rpartition(".")[2]
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        outcome = "passed" if problem is None else (problem.get("message") or "failed")
        outcomes.setdefault(klass, {})[case.get("name", "")] = outcome
    return outcomes


def _failed(outcomes: dict[str, str]) -> dict[str, str]:
    return {name: message for name, message in outcomes.items() if message != "passed"}


CHECKS = sorted(
    name for name in dir(RetrieverConformance) if name.startswith("test_") and name != "test_odd_query_survives"
) + [f"test_odd_query_survives[{name}]" for name, _ in ODD_QUERIES]


@pytest.mark.parametrize("klass", ["TestGood", "TestGoodLambda", "TestGoodPlainObject"])
def test_correct_retrievers_pass_every_check(suite_outcomes, klass):
    assert sorted(suite_outcomes[klass]) == sorted(CHECKS)
    assert _failed(suite_outcomes[klass]) == {}


@pytest.mark.parametrize(
    ("klass", "failing", "message"),
    [
        ("TestZeroSize", {"test_index_size_bytes"}, "returned 0"),
        ("TestFlaky", {"test_deterministic_across_instances"}, "scores of id"),
        ("TestBatchDropsLast", {"test_search_many_agrees_with_search"}, "ids differ"),
        # The determinism and batch checks ask the empty query too.
        ("TestCrashesOnEmpty", {"test_odd_query_survives[empty]", "test_search_many_agrees_with_search",
                                "test_deterministic_across_instances"}, "syntax error"),
        ("TestNeverFinds", {"test_search_returns_corpus_ids_best_first_at_most_k"}, "no hits for any query"),
    ],
)
def test_a_narrow_fault_fails_exactly_its_checks(suite_outcomes, klass, failing, message):
    failed = _failed(suite_outcomes[klass])
    assert set(failed) == failing
    assert all(message in text for text in failed.values()), failed


@pytest.mark.parametrize(
    ("klass", "must_fail", "message"),
    [
        ("TestIgnoresK", {"test_k_one", "test_search_returns_corpus_ids_best_first_at_most_k",
                          "test_odd_query_survives[10000-chars]"}, "hits for k=1"),
        ("TestWorstFirst", {"test_search_returns_corpus_ids_best_first_at_most_k",
                            "test_k_larger_than_corpus"}, "scores increase"),
        ("TestForeignIds", {"test_search_returns_corpus_ids_best_first_at_most_k",
                            "test_k_larger_than_corpus", "test_odd_query_survives[emoji]"},
         "not in the corpus"),
        ("TestNoFactory", set(CHECKS) - {f"test_odd_query_survives[{n}]" for n, _ in ODD_QUERIES},
         "must set retriever_factory"),
    ],
)
def test_a_broad_fault_fails_its_checks_with_a_reason(suite_outcomes, klass, must_fail, message):
    failed = _failed(suite_outcomes[klass])
    assert must_fail <= set(failed), sorted(set(must_fail) - set(failed))
    assert all(message in failed[name] for name in must_fail), {n: failed[n] for n in must_fail}
    assert suite_outcomes[klass]["test_index_size_bytes"] == "passed" or klass == "TestNoFactory"


def test_the_fixture_unregisters_when_the_test_ends(suite_outcomes):
    module = suite_outcomes[""] if "" in suite_outcomes else suite_outcomes["test_conformance_suite_cases"]
    assert module == {"test_fixture_registers_for_one_test": "passed", "test_and_unregisters_after_it": "passed"}


def test_the_suite_is_not_collected_on_its_own():
    # The base class's name does not start with "Test": importing it into a test module adds no tests.
    assert not RetrieverConformance.__name__.startswith("Test")


def test_check_top_k_of_allows_near_ties_in_either_order_and_nothing_else():
    reference = [Hit("a", 9.0), Hit("b", 7.6292554221497655), Hit("c", 7.629255422149766),
                 Hit("d", 1.0)]
    check_top_k_of([Hit("a", 9.0), Hit("c", 7.629255422149766), Hit("b", 7.6292554221497655)],
                   reference, 3)
    # Across the cut at k: either near-tied id may be the one kept.
    check_top_k_of([Hit("a", 9.0), Hit("c", 7.629255422149766)], reference, 2)
    with pytest.raises(AssertionError, match="not a near-tie"):
        check_top_k_of([Hit("a", 9.0), Hit("d", 1.0)], reference, 2)
    with pytest.raises(AssertionError, match="scored"):
        check_top_k_of([Hit("a", 9.0), Hit("b", 7.7)], reference, 2)
    with pytest.raises(AssertionError, match="never returns"):
        check_top_k_of([Hit("a", 9.0), Hit("z", 7.6292554221497655)], reference, 2)
    with pytest.raises(AssertionError, match="hits, expected"):
        check_top_k_of([Hit("a", 9.0)], reference, 2)


class _GreetPlugin:
    @hookimpl
    def register_commands(self, app: typer.Typer) -> None:
        @app.command("greet-for-test")
        def greet() -> None:
            print("hello from a plugin command")


def test_invoke_cli_sees_the_commands_of_a_plugin_registered_after_the_app_was_built() -> None:
    # before: the first `get_app()` in a process fixed the plugin commands, so a plugin test that
    # ran after any CLI test on the same pytest worker got "No such command" (57 failures in make test)
    from recall_kit.cli import get_app
    from recall_kit.testing import invoke_cli

    get_app()
    with registered_plugin(_GreetPlugin(), name="greet-for-test"):
        done = invoke_cli(["greet-for-test"], plugin_commands=True)
        assert done.exit_code == 0 and "hello from a plugin command" in done.output, done.output
    assert invoke_cli(["greet-for-test"], plugin_commands=True).exit_code == 2  # gone with its plugin
