"""The runner: index builds, batch and single paths, scopes, adapters, contract checks, results."""

from __future__ import annotations

import json
import math

import pytest
from helpers import OverlapRetriever, write_dataset

from recall_kit import Hit, Retriever, load_dataset, run_benchmark
from recall_kit.errors import FailedQueriesError, PluginRunError, ResultFileError, SpecError
from recall_kit.measure.result import SCHEMA, BenchmarkResult
from recall_kit.measure.result_report import attribution_table, metrics_table, result_summary
from recall_kit.measure.result_sections import LegAttribution
from recall_kit.measure.run.failures import MaxFailed
from recall_kit.measure.run.runner import checked_hits
from recall_kit.types import Corpus, FailedSearch, Memory


def test_result_document_and_hand_checked_metrics(tiny_dataset):
    dataset = load_dataset(tiny_dataset)
    result = run_benchmark(OverlapRetriever, dataset, k=5, metrics=["recall@1", "mrr", "ndcg@5"],
                           latency_sample=None)
    data = result.to_dict()
    assert data["schema"] == SCHEMA
    by_id = {q.query_id: q for q in result.queries}
    # e1 "stores events in ClickHouse": memory 1 shares 4 words, nothing else shares any.
    assert by_id["e1"].ranking == ["1"]
    assert by_id["e1"].metrics == {"recall@1": 1.0, "mrr": 1.0, "ndcg@5": 1.0}
    # p1 "morning coffee order" shares no word with memory 3: every metric is 0.
    assert by_id["p1"].ranking == [] and by_id["p1"].metrics["mrr"] == 0.0
    # m1 ("which database does priya s project use"): memory 2 shares "priya" and "project" (2),
    # memory 1 shares nothing. Graded qrels {1: 2, 2: 1}: DCG = 1/log2(2); IDCG = 2 + 1/log2(3).
    assert by_id["m1"].ranking == ["2"]
    assert by_id["m1"].metrics["ndcg@5"] == pytest.approx(1 / (2 + 1 / math.log2(3)), abs=1e-6)
    assert by_id["m1"].metrics["mrr"] == 1.0
    assert result.n_queries == 4
    assert result.mean("mrr") == pytest.approx((1 + 1 + 0 + 1) / 4)
    assert result.stratum_size("exact") == 2
    assert result.latency.n == 4
    assert result.index.size_bytes > 0
    assert result.dataset.dropped_sensitive == 1
    # The result holds no memory or query text.
    text = json.dumps(data)
    assert "ClickHouse" not in text and "coffee" not in text


def test_summary_and_round_trip(tiny_dataset, tmp_path):
    result = run_benchmark(OverlapRetriever, load_dataset(tiny_dataset), k=3)
    path = tmp_path / "out" / "r.json"
    result.save(path)
    again = BenchmarkResult.load(path)
    assert again.to_dict() == json.loads(json.dumps(result.to_dict()))
    summary = result_summary(again)
    for stratum in ("overall", "exact", "paraphrase", "multihop"):
        assert stratum in summary


class RetrieveOnly:
    """A plain object with retrieve(query, k) -> ids: the runner adapts it."""

    def __init__(self) -> None:
        self.indexed: list[str] = []

    def build_index(self, corpus: Corpus) -> None:
        self.indexed = corpus.ids

    def retrieve(self, query: str, k: int) -> list[int]:
        return [int(doc) for doc in reversed(self.indexed)][:k]


def test_plain_object_and_bare_callable_are_adapted(tiny_dataset):
    dataset = load_dataset(tiny_dataset)
    result = run_benchmark(RetrieveOnly(), dataset, k=2, metrics=["recall@2"])
    assert result.queries[0].ranking == ["5", "4"]
    assert result.queries[0].scores == [1.0, 0.5]
    called = run_benchmark(lambda query, k: ["3", "3", "1"], dataset, k=5, metrics=["mrr"])
    ranking = called.queries[2].ranking
    assert ranking == ["3", "1"]  # duplicates dropped, order kept
    assert called.per_query("mrr")["p1"] == 1.0


def test_scopes_build_one_index_per_scope(tmp_path):
    corpus = [
        {"id": 1, "content": "alpha beta", "scope": "alice"},
        {"id": 2, "content": "alpha beta", "scope": "bob"},
        {"id": 3, "content": "alpha", "scope": "bob"},
    ]
    queries = [{"query_id": "qa", "text": "alpha beta", "scope": "alice"},
               {"query_id": "qb", "text": "alpha beta", "scope": "bob"}]
    qrels = [{"query_id": "qa", "relevant_ids": [1]}, {"query_id": "qb", "relevant_ids": [2]}]
    dataset = load_dataset(write_dataset(tmp_path / "s", corpus, queries, qrels))
    result = run_benchmark(OverlapRetriever, dataset, k=5)
    assert result.rankings() == {"qa": ["1"], "qb": ["2", "3"]}
    assert result.index.legs["OverlapRetriever"].indexes == 2
    with pytest.raises(SpecError, match="must be a class"):
        run_benchmark(RetrieveOnly(), dataset)


class Broken(Retriever):
    def build_index(self, corpus: Corpus) -> None:
        pass

    def search(self, query: str, k: int) -> list[Hit]:
        raise RuntimeError("disk on fire")


class Exiting(OverlapRetriever):
    def search(self, query: str, k: int) -> list[Hit]:
        raise SystemExit(0)  # must not end a run as a success with nothing written


class Infinite(OverlapRetriever):
    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit("1", float("inf"))]


class MinusInfinite(OverlapRetriever):
    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit("1", float("-inf"))]


class Unsorted(OverlapRetriever):
    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit("1", 0.1), Hit("2", 0.9)]


class TextScores(OverlapRetriever):  # issue 72: "0.5" was read as 0.5, quietly
    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit("1", "0.5")]  # type: ignore[arg-type]


class TextScorePairs(OverlapRetriever):
    def search(self, query: str, k: int) -> list[Hit]:
        return [("1", "0.5")]  # type: ignore[list-item]


class Stranger(OverlapRetriever):
    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit("999", 1.0)]


@pytest.mark.parametrize(
    ("retriever", "message"),
    [
        (Broken, "Retriever 'Broken' failed on a batch of queries: RuntimeError (message withheld"),
        (Exiting, "Retriever 'Exiting' failed on a batch of queries: SystemExit(0)"),
        (Infinite, "Retriever 'Infinite' returned a non-finite score (inf) for query e1"),
        (MinusInfinite, "Retriever 'MinusInfinite' returned a non-finite score (-inf) for query e1"),
        (Unsorted, "out of order for query e1"),
        (Stranger, "returned id '999' for query e1, which is not in the corpus"),
        (TextScores, "hit 1's score is str, not a number"),
        (TextScorePairs, "hit 1's score is str, not a number"),
    ],
)
def test_contract_violations_are_one_clear_error(tiny_dataset, retriever, message):
    with pytest.raises(PluginRunError) as error:
        run_benchmark(retriever, load_dataset(tiny_dataset))
    assert message in str(error.value)


def test_plugin_messages_are_withheld_unless_debug(tiny_dataset, monkeypatch):
    # A plugin's message may quote memory text: only --debug (RECALL_KIT_DEBUG) shows it.
    with pytest.raises(PluginRunError) as error:
        run_benchmark(Broken, load_dataset(tiny_dataset))
    assert "disk on fire" not in str(error.value)
    assert isinstance(error.value.__cause__, RuntimeError)  # the Python caller still has it
    monkeypatch.setenv("RECALL_KIT_DEBUG", "1")
    with pytest.raises(PluginRunError, match="RuntimeError: disk on fire"):
        run_benchmark(Broken, load_dataset(tiny_dataset))


def test_ctrl_c_in_a_plugin_is_not_a_plugin_error(tiny_dataset):
    class Interrupted(OverlapRetriever):
        def search(self, query: str, k: int) -> list[Hit]:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_benchmark(Interrupted, load_dataset(tiny_dataset))


def test_ties_are_put_in_trec_eval_order():
    corpus = Corpus([Memory("a", ""), Memory("b", ""), Memory("c", "")])
    hits = checked_hits("x", [Hit("a", 2.0), Hit("b", 1.0), Hit("c", 1.0)], 3, corpus, "q")
    # Equal scores: trec_eval orders by document id, descending.
    assert [hit.id for hit in hits] == ["a", "c", "b"]


def test_parent_level_scoring(tmp_path):
    corpus = [
        {"id": "d1#0", "content": "red fox", "parent_id": "d1"},
        {"id": "d1#1", "content": "red fox jumps", "parent_id": "d1"},
        {"id": "d2#0", "content": "red", "parent_id": "d2"},
    ]
    queries = [{"query_id": "q", "text": "red fox jumps"}]
    dataset = load_dataset(write_dataset(tmp_path / "p", corpus, queries, [{"query_id": "q", "relevant_ids": ["d2"]}]))
    result = run_benchmark(OverlapRetriever, dataset, k=2, metrics=["mrr"])
    # Chunks rank d1#1 (3), d1#0 (2), d2#0 (1); as parents: d1, d2 -> the relevant d2 is rank 2.
    assert result.queries[0].ranking == ["d1", "d2"]
    assert result.mean("mrr") == 0.5


def test_judged_coverage_is_relative_to_what_could_be_judged():
    from recall_kit.measure.run.diagnostics import judged_coverage
    from recall_kit.measure.score.evaluation import judge_rankings

    qrels = {"a": {"1": 1, "2": 0}, "b": {"9": 1}, "c": {"5": 1}}
    data = judge_rankings(["a", "b", "c"], [["1", "7", "2"], ["8", "7"], []], qrels)
    # a: top 3 hold 2 judged ids of 2 attainable -> 1.0; b: 0 of min(2, 1) = 1 -> 0.0; c: no ranking.
    assert judged_coverage(data, [2, 1, 1], 10) == 0.5
    assert judged_coverage(data, [2, 1, 1], 1) == 0.5  # a: "1" judged (1/1), b: "8" not (0/1)
    assert judged_coverage(judge_rankings(["c"], [[]], qrels), [1], 10) is None


def test_sparse_qrels_do_not_trigger_the_unjudged_warning(tiny_dataset):
    result = run_benchmark(OverlapRetriever, load_dataset(tiny_dataset), k=20)
    assert not any("judged ids" in warning for warning in result.warnings)


def test_scores_equal_at_float32_precision_count_as_ties():
    corpus = Corpus([Memory("a", ""), Memory("b", "")])
    # 1.0 + 1e-12 and 1.0 tie at float32 precision: "b" before "a" (id descending) is in order.
    hits = checked_hits("x", [Hit("b", 1.0), Hit("a", 1.0 + 1e-12)], 2, corpus, "q")
    assert [hit.id for hit in hits] == ["b", "a"]


def test_a_leg_better_alone_than_the_fusion_is_reported(tiny_dataset, overlap_plugin) -> None:
    """overlap alone: recall@1 = (1 + 1 + 0 + 0.5) / 4 = 0.625 (e1, e2 right; m1 finds 1 of 2);
    the id-descending leg puts memory 5 first for every query; with rrf both rank-1 documents get
    1/61 and ties go to the larger id, so e2 (4 < 5) and p1 are lost: fused 0.375."""
    from recall_kit.measure.systems.system import SystemSpec
    from recall_kit.testing import registered_plugin

    fusion_plugin = pytest.importorskip("recall_kit_fusion")
    dataset = load_dataset(tiny_dataset)
    single = run_benchmark("overlap", dataset, k=1, metrics=["recall@1"], latency_sample=0)
    assert single.mean("recall@1") == 0.625
    assert not any("alone scores" in warning for warning in single.warnings)
    with registered_plugin(fusion_plugin, name="fusion-for-test"):
        fused = run_benchmark(SystemSpec("overlap+helpers:ReverseIdRetriever", fusions=["rrf"]), dataset,
                              k=1, metrics=["recall@1"], latency_sample=0)
    assert fused.mean("recall@1") == 0.375
    [warning] = [w for w in fused.warnings if "alone scores" in w]
    assert warning.startswith("Leg 'overlap' alone scores recall@1 0.6250, above the fused 0.3750 (rrf)")
    assert "--fusion convex" in warning


def _ladder_dataset(folder):
    """Three memories that share 3, 2 and 1 words with the one query; the relevant one ranks 3rd."""
    corpus = [{"id": 1, "content": "alpha beta gamma"}, {"id": 2, "content": "alpha beta"},
              {"id": 3, "content": "alpha"}]
    queries = [{"query_id": "q1", "text": "alpha beta gamma", "stratum": "s"}]
    return write_dataset(folder, corpus, queries, [{"query_id": "q1", "relevant_ids": [3]}])


def test_a_cutoff_past_k_raises_the_depth_instead_of_repeating_recall_at_k(tmp_path):
    dataset = load_dataset(_ladder_dataset(tmp_path / "ladder"))
    result = run_benchmark(OverlapRetriever, dataset, k=1, metrics=["recall@1", "recall@3", "mrr"],
                           latency_sample=0)
    # Ranking 1, 2, 3: the relevant memory 3 is at rank 3, so recall@3 = 1 and mrr = 1/3.
    assert result.k == 3 and result.k_requested == 1
    assert result.queries[0].ranking == ["1", "2", "3"]
    assert result.mean("recall@1") == 0.0
    assert result.mean("recall@3") == 1.0
    assert result.mean("mrr") == pytest.approx(1 / 3)
    assert any("k raised from 1 to 3 so that recall@3 is measured" in w for w in result.warnings)
    # mrr reads the whole ranking: the report says how deep that was.
    assert "mrr: computed over the top 3" in " ".join(metrics_table(result).notes)
    # A cutoff past the corpus cannot be deeper than the corpus: k stops there, still exact.
    deep = run_benchmark(OverlapRetriever, dataset, k=1, metrics=["recall@50"], latency_sample=0)
    assert deep.k == 3 and deep.mean("recall@50") == 1.0


def test_k_is_not_raised_when_no_cutoff_asks_for_it(tiny_dataset):
    result = run_benchmark(OverlapRetriever, load_dataset(tiny_dataset), k=5, metrics=["recall@2", "mrr"],
                           latency_sample=0)
    assert result.k == result.k_requested == 5
    assert not any("k raised" in w for w in result.warnings)


def test_attribution_is_measured_at_k_not_at_the_fusion_depth():
    from recall_kit.measure.run.diagnostics import _attribution

    # Fused top 2 = x, y; y relevant. Leg a ranked x 1st and y 4th; leg b ranked y 1st and x 5th.
    # In their own top 2, x is a's alone and y is b's alone, though both reach both at depth 5.
    found = [{"x": {"a": 1, "b": 5}, "y": {"b": 1, "a": 4}, "z": {"a": 2}}]
    table, warnings = _attribution(["a", "b"], found, [["x", "y"]], [{"y", "z"}], {"a": 1.0, "b": 1.0}, 2)
    assert table["a"] == LegAttribution(relevant_in_top_k=0, relevant_only_this_leg=0,
                                        relevant_pushed_out=1, unique_in_top_k=1)  # z: a's 2nd, lost
    assert table["b"] == LegAttribution(relevant_in_top_k=1, relevant_only_this_leg=1,
                                        relevant_pushed_out=0, unique_in_top_k=1)
    assert warnings == []
    # At depth 5 both legs reach x and y: neither placed a document only it found.
    _, deep_warnings = _attribution(["a", "b"], found, [["x", "y"]], [{"y", "z"}], {"a": 1.0, "b": 1.0}, 5)
    assert len(deep_warnings) == 2 and "in its own top 5" in deep_warnings[0]


def test_attribution_depth_is_in_the_result_and_the_report(tiny_dataset):
    from recall_kit.measure.result import BenchmarkResult

    result = run_benchmark(OverlapRetriever, load_dataset(tiny_dataset), k=3, metrics=["recall@3"],
                           latency_sample=0)
    assert result.attribution_depth == 3
    result.attribution = {"a": LegAttribution(), "b": LegAttribution()}
    table = attribution_table(BenchmarkResult.from_dict(result.to_dict()))
    assert table is not None and "measured at depth 3" in table.title


def test_a_leg_that_returns_nothing_for_many_queries_is_named(tiny_dataset):
    class Strict(OverlapRetriever):
        """Needs 4 shared words: only e1 and e2 find anything (2 of 4 queries empty)."""

        def search(self, query, k):
            return [hit for hit in super().search(query, k) if hit.score >= 4]

    result = run_benchmark(Strict, load_dataset(tiny_dataset), k=3, metrics=["mrr"], latency_sample=0)
    assert result.empty_rankings == {"Strict": 2}
    assert "Leg 'Strict' returned no hits for 2 of 4 queries (50%)" in " ".join(result.warnings)


def test_attribution_counts_relevant_at_the_relevance_level(tmp_path, overlap_plugin) -> None:
    """overlap ranks 1, 2, 3 for "alpha beta gamma", the id-descending leg 3, 2, 1; with rrf at k = 1
    memories 1 and 3 tie (1/61 + 1/63) and the larger id wins: the fused top 1 is memory 3, which
    only the id-descending leg holds in its top 1. Memory 3 has grade 1, memory 1 grade 2: at -l 2
    memory 3 is not relevant, so that leg found nothing relevant only it found."""
    from recall_kit.measure.systems.system import SystemSpec
    from recall_kit.testing import registered_plugin

    fusion_plugin = pytest.importorskip("recall_kit_fusion")
    corpus = [{"id": 1, "content": "alpha beta gamma"}, {"id": 2, "content": "alpha beta"},
              {"id": 3, "content": "alpha"}]
    queries = [{"query_id": "q1", "text": "alpha beta gamma", "stratum": "s"}]
    qrels = [{"query_id": "q1", "relevance": {"3": 1, "1": 2}}]
    dataset = load_dataset(write_dataset(tmp_path / "graded", corpus, queries, qrels))
    spec = SystemSpec("overlap+helpers:ReverseIdRetriever", fusions=["rrf"])
    with registered_plugin(fusion_plugin, name="fusion-for-test"):
        lenient = run_benchmark(spec, dataset, k=1, metrics=["recall@1"], latency_sample=0)
        strict = run_benchmark(spec, dataset, k=1, metrics=["recall@1"], latency_sample=0, relevance_level=2)
    reverse = "helpers:ReverseIdRetriever"
    assert lenient.queries[0].ranking == strict.queries[0].ranking == ["3"]
    assert lenient.attribution[reverse].relevant_only_this_leg == 1
    assert lenient.mean("recall@1") == 0.5
    assert strict.mean("recall@1") == 0.0
    assert strict.attribution[reverse] == LegAttribution(unique_in_top_k=1)
    assert strict.attribution["overlap"].relevant_pushed_out == 1  # memory 1 (grade 2), lost


class FlakyRemote(OverlapRetriever):
    """An overlap retriever that fails on queries with "coffee" (as a remote leg whose call
    failed after its retries) and reports a fixed wait on an outside system."""

    def search(self, query, k):  # type: ignore[no-untyped-def]
        if "coffee" in query:
            return FailedSearch("HTTP 503; 3 tries")
        return super().search(query, k)

    def last_wait_ms(self) -> float | None:
        return 0.0


def test_a_failed_search_yields_no_result_unless_accepted(tiny_dataset):
    """A failed query is not a miss: by default the run raises, naming the leg, the query and the
    reason; `max_failed` of 0 (a count) or a share below one query refuses too."""
    dataset = load_dataset(tiny_dataset)
    for refused in (None, MaxFailed(count=0), MaxFailed(share=0.5 / len(dataset.queries))):
        with pytest.raises(FailedQueriesError, match=r"^Leg 'FlakyRemote' failed on 1 of \d+ queries \(p1: HTTP 503; 3 tries\)"):
            run_benchmark(FlakyRemote, dataset, k=5, metrics=["mrr"], latency_sample=None, max_failed=refused)


def test_failed_searches_are_scored_empty_counted_and_named(tiny_dataset):
    dataset = load_dataset(tiny_dataset)
    result = run_benchmark(FlakyRemote, dataset, k=5, metrics=["mrr"], latency_sample=None,
                           max_failed=MaxFailed(count=1))
    failing = [query.query_id for query in dataset.queries if "coffee" in query.text]
    assert failing == ["p1"]
    assert result.failed_queries == {"FlakyRemote": {"p1": "HTTP 503; 3 tries"}}
    assert result.rankings()["p1"] == []
    assert (f"Leg 'FlakyRemote' failed on 1 of {len(dataset.queries)} queries, scored as empty rankings: "
            "p1 (HTTP 503; 3 tries).") in result.warnings
    assert result.index.legs["FlakyRemote"].stats["failed_queries"] == 1
    latency = result.latency.leg("FlakyRemote")
    assert latency.wait is not None and latency.overhead is not None
    # The failed query is not timed; the others waited 0 ms, so all their time is overhead.
    assert latency.n == latency.wait.n == latency.overhead.n == len(dataset.queries) - 1
    assert latency.wait.max == 0.0 and latency.overhead.p50 == latency.p50


def test_accepted_failures_survive_a_round_trip_and_a_forged_id_is_refused(tiny_dataset, tmp_path):
    result = run_benchmark(FlakyRemote, load_dataset(tiny_dataset), k=5, metrics=["mrr"], latency_sample=None,
                           max_failed="100%")
    path = tmp_path / "r.json"
    result.save(path)
    loaded = BenchmarkResult.load(path)
    assert loaded.failed_queries == result.failed_queries == {"FlakyRemote": {"p1": "HTTP 503; 3 tries"}}
    assert loaded.n_failed == 1
    data = json.loads(path.read_text())
    data["failed_queries"]["FlakyRemote"]["nope"] = "x"
    with pytest.raises(ResultFileError, match=r"failed_queries.FlakyRemote: query 'nope' is not in queries"):
        BenchmarkResult.from_dict(data)


def test_in_process_legs_report_no_wait(tiny_dataset):
    result = run_benchmark(OverlapRetriever, load_dataset(tiny_dataset), k=5, metrics=["mrr"], latency_sample=None)
    assert result.latency.leg("OverlapRetriever").wait is None
    assert not any("failed on" in warning for warning in result.warnings)


def test_legs_search_to_the_raised_k_when_metrics_are_the_defaults(tiny_dataset):
    """k is raised to the default metrics' largest cutoff (recall@10) when no metrics are named:
    the legs must search that deep too, or every ranking stops at the k asked for (a regression of
    issue 25's straight path: the single-leg system was searched at the asked k, 2)."""
    dataset = load_dataset(tiny_dataset)
    asked = run_benchmark(lambda query, k: [m.id for m in dataset.corpus][:k], dataset, k=2, latency_sample=0)
    raised = min(10, len(dataset.corpus))  # a cutoff past the corpus is cut to its size
    assert asked.k == raised > 2 and asked.k_requested == 2
    assert {len(ranking) for ranking in asked.rankings().values()} == {raised}
