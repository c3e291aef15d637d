"""The typed result: accessors, validation of result files (one line naming the field), run files."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from helpers import OverlapRetriever

from recall_kit import load_dataset, run_benchmark
from recall_kit.errors import ResultFileError
from recall_kit.measure.comparable import check_comparable
from recall_kit.measure.result import SCHEMA, BenchmarkResult, QueryResult
from recall_kit.measure.result_report import cost_table, metrics_table
from recall_kit.measure.result_sections import LatencyStats
from recall_kit.measure.score.trec import read_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def result(tiny_dataset) -> BenchmarkResult:
    return run_benchmark(OverlapRetriever, load_dataset(tiny_dataset), k=5, metrics=["recall@1", "mrr"],
                         latency_sample=None)


def test_accessors_answer_what_the_document_holds(result):
    data = result.to_dict()
    assert result.query_ids == [q["query_id"] for q in data["queries"]]
    assert result.stratum_of() == {q["query_id"]: q["stratum"] for q in data["queries"]}
    assert result.per_query("mrr") == {q["query_id"]: q["metrics"]["mrr"] for q in data["queries"]}
    assert result.rankings()["e1"] == ["1"]
    assert result.fingerprint == data["dataset"]["fingerprint"]
    assert result.metric_names == ["recall@1", "mrr"]
    assert len(result.latencies()) == data["latency_ms"]["n"] == 4
    assert result.n_queries == len(data["queries"])
    mrr = [q["metrics"]["mrr"] for q in data["queries"]]
    assert result.mean("mrr") == pytest.approx(sum(mrr) / len(mrr))
    stratum = data["queries"][0]["stratum"]
    in_stratum = [q["metrics"]["mrr"] for q in data["queries"] if q["stratum"] == stratum]
    assert result.mean("mrr", stratum=stratum) == pytest.approx(sum(in_stratum) / len(in_stratum))
    with pytest.raises(KeyError, match="Metric 'ndcg@3' was not scored"):
        result.mean("ndcg@3")
    with pytest.raises(KeyError, match="No stratum 'nope'"):
        result.mean("mrr", stratum="nope")
    assert isinstance(result.queries[0], QueryResult)
    assert result.manifest.seed == 0 and result.k == 5
    assert result.stratum_size() == 4 and result.stratum_size(stratum) == len(in_stratum)
    assert "n" not in result.overall and all("n" not in means for means in result.strata.values())
    assert data["metrics"]["overall"]["n"] == 4  # the document keeps its "n" for older readers


def test_from_dict_round_trips_the_schema_unchanged(result):
    data = json.loads(json.dumps(result.to_dict()))
    assert BenchmarkResult.from_dict(data).to_dict() == data


@pytest.mark.parametrize("name", ["result-fts5-bm25.json", "result-fts5.json"])
def test_files_written_before_the_typed_sections_round_trip_unchanged(name):
    # Written by `recall-kit eval --json` before the sections were typed (a fused system with a
    # context-expanded leg; a single untimed leg): loading and writing back changes nothing.
    path = ROOT / "tests" / "data" / name
    original = json.loads(path.read_text(encoding="utf-8"))
    result = BenchmarkResult.load(path)
    assert result.to_dict() == original
    assert json.dumps(result.to_dict(), indent=2) == json.dumps(original, indent=2)  # key order too


def test_typed_sections_read_what_the_document_holds():
    result = BenchmarkResult.load(ROOT / "tests" / "data" / "result-fts5-bm25.json")
    assert result.system.spec == "fts5+bm25" and result.label == "fts5+bm25 (rrf > exact-bonus)"
    assert [leg.name for leg in result.system.legs] == ["fts5", "bm25"]
    assert result.system.legs[1].context == {"window": 1, "weight": 1, "by": "scope", "order": "corpus", "date": False}
    assert [step.name for step in result.system.fusion] == ["rrf", "exact-bonus"]
    assert result.system.fusion[0].options == {"k": 60, "depth": 100}
    assert result.dataset.memories == 5 and result.dataset.strata == {"exact": 2, "multihop": 1, "paraphrase": 1}
    assert result.n_queries == 4 and result.stratum_size("exact") == 2 and result.stratum_size("multihop") == 1
    assert result.mean("num_ret") == 10.0 == sum(len(q.ranking) for q in result.queries)  # a count: summed
    assert result.latency.n == 3 and result.latency.leg("bm25").p50 == 0.0477 and not result.latency.leg("x").measured
    assert result.latency.stat("p95") == 0.1822
    assert result.index.legs["bm25"].stats["vocabulary"] == 29 and result.index.size_bytes == 37027
    assert result.throughput.queries == 4 and result.manifest.plugins["recall-kit-bm25"] == "0.1.0"
    assert result.attribution["bm25"].relevant_only_this_leg == 1
    with pytest.raises(KeyError, match="Unknown latency statistic 'p42'"):
        result.latency.stat("p42")


def test_a_waiting_legs_wait_and_overhead_and_unknown_keys_survive_a_round_trip(result):
    data = json.loads(json.dumps(result.to_dict()))
    stats = {"n": 2, "p50": 3.0, "p95": 4.0, "p99": 4.0, "mean": 3.5, "max": 4.0}
    data["latency_ms"]["legs"]["OverlapRetriever"].update(wait=stats, overhead={**stats, "p50": 0.5})
    data["system"]["added_later"] = {"x": 1}
    data["index"]["legs"]["OverlapRetriever"]["graph_nodes"] = 7
    back = BenchmarkResult.from_dict(data)
    assert back.latency.legs["OverlapRetriever"].wait == LatencyStats(**stats)
    assert back.latency.legs["OverlapRetriever"].overhead.p50 == 0.5
    assert back.index.legs["OverlapRetriever"].stats["graph_nodes"] == 7
    assert back.to_dict() == data
    assert any("ms waiting on the system it calls" in note for note in cost_table(back).notes)


def test_each_legs_untimed_first_query_is_kept_apart_from_its_latency(result):
    leg = result.latency.legs["OverlapRetriever"]
    assert leg.first_query_ms is not None and leg.first_query_ms >= 0
    assert result.to_dict()["latency_ms"]["legs"]["OverlapRetriever"]["first_query_ms"] == leg.first_query_ms
    assert leg.n == 4  # the first call is not among the timed queries
    data = json.loads(json.dumps(result.to_dict()))
    del data["latency_ms"]["legs"]["OverlapRetriever"]["first_query_ms"]  # a file written before it
    back = BenchmarkResult.from_dict(data)
    assert back.latency.legs["OverlapRetriever"].first_query_ms is None and back.to_dict() == data


def test_write_run_scores_back_to_the_same_rankings(result, tmp_path):
    result.write_run(tmp_path / "r.trec")
    run = read_run(tmp_path / "r.trec")
    assert {q: [hit.id for hit in hits] for q, hits in run.items()} == {
        q: ranking for q, ranking in result.rankings().items() if ranking}


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d.pop("queries"), "missing 'queries'"),
        (lambda d: d["queries"].append(copy.deepcopy(d["queries"][0])), "appears twice"),
        (lambda d: d["queries"][1]["metrics"].update(mrr=float("nan")), r"queries\[1\]\.metrics\.mrr is nan"),
        (lambda d: d["queries"][0]["metrics"].pop("mrr"), r"missing 'queries\[0\]\.metrics\.mrr'"),
        (lambda d: d["queries"][0].update(ranking="1"), r"queries\[0\]\.ranking is not a list"),
        (lambda d: d["queries"][0].update(scores=[]), "ranked ids but 0 scores"),
        # a score that is no number was an "unexpected ValueError" (a string) or TypeError (a list), or read
        # as a number ("NaN", true); an id twice in a ranking was kept (recall-kit writes each once)
        (lambda d: d["queries"][0]["scores"].__setitem__(0, "abc"), r"queries\[0\]\.scores\[0\] is 'abc'"),
        (lambda d: d["queries"][0]["scores"].__setitem__(0, [1]), r"queries\[0\]\.scores\[0\] is \[1\]"),
        (lambda d: d["queries"][0]["scores"].__setitem__(0, "NaN"), r"queries\[0\]\.scores\[0\] is 'NaN'"),
        (lambda d: d["queries"][0]["scores"].__setitem__(0, True), r"queries\[0\]\.scores\[0\] is True"),
        (lambda d: (d["queries"][0]["ranking"].append(d["queries"][0]["ranking"][0]),
                    d["queries"][0]["scores"].append(d["queries"][0]["scores"][-1])),
         r"queries\[0\]\.ranking holds '.+' twice"),
        (lambda d: d["metrics"].update(names="mrr"), "metrics.names is not a list"),
        (lambda d: d.update(k="five"), "k is 'five'"),
        (lambda d: d["system"]["legs"][0].update(weight="heavy"), r"system\.legs\[0\]\.weight is 'heavy'"),
        (lambda d: d["dataset"].update(memories=-3), r"dataset\.memories is -3\.0, not a count"),
        (lambda d: d["latency_ms"]["legs"]["OverlapRetriever"].update(p95=-1), r"latency_ms\.legs\.OverlapRetriever\.p95 is -1\.0, below 0"),
        (lambda d: d["latency_ms"]["legs"]["OverlapRetriever"].update(first_query_ms="slow"),
         r"latency_ms\.legs\.OverlapRetriever\.first_query_ms is 'slow'"),
        (lambda d: d["index"]["legs"].update(OverlapRetriever=[]), r"index\.legs\.OverlapRetriever is not an object"),
        (lambda d: d["throughput"].update(queries_per_second="fast"), r"throughput\.queries_per_second is 'fast'"),
        (lambda d: d["manifest"].update(plugins=["x"]), r"manifest\.plugins is not an object"),
        (lambda d: d["metrics"]["strata"].update(exact=3), r"metrics\.strata\.exact is not an object"),
    ],
)
def test_a_damaged_result_file_is_one_line_naming_the_field(result, tmp_path, damage, message):
    data = json.loads(json.dumps(result.to_dict()))
    damage(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultFileError, match=message) as caught:
        BenchmarkResult.load(path)
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


def test_unreadable_result_files(tmp_path):
    with pytest.raises(ResultFileError, match="no such result file"):
        BenchmarkResult.load(tmp_path / "absent.json")
    with pytest.raises(ResultFileError, match="is a directory"):
        BenchmarkResult.load(tmp_path)
    (tmp_path / "old.json").write_text(json.dumps({"schema": "recall-kit/result/0"}))
    with pytest.raises(ResultFileError, match=f"expected schema '{SCHEMA}'"):
        BenchmarkResult.load(tmp_path / "old.json")


def test_check_comparable_refuses_other_datasets_and_query_sets(result):
    other = BenchmarkResult.from_dict({**result.to_dict(), "dataset": {**result.dataset.to_dict(), "fingerprint": "x"}})
    with pytest.raises(ResultFileError, match="different datasets"):
        check_comparable([("a", result), ("b", other)])
    fewer = BenchmarkResult.from_dict({**result.to_dict(), "queries": result.to_dict()["queries"][1:]})
    with pytest.raises(ResultFileError, match="different query sets"):
        check_comparable([("a", result), ("b", fewer)])
    assert check_comparable([("a", result), ("b", result)]) == result.query_ids


def test_relevance_level_and_judged_only_are_recorded_and_read_back(tiny_dataset):
    scored = run_benchmark(OverlapRetriever, load_dataset(tiny_dataset), k=5, metrics=["num_rel"],
                           latency_sample=0, relevance_level=2, judged_only=True)
    data = json.loads(json.dumps(scored.to_dict()))
    assert data["metrics"]["relevance_level"] == 2 and data["metrics"]["judged_only"] is True
    back = BenchmarkResult.from_dict(data)
    assert (back.relevance_level, back.judged_only) == (2, True)
    assert any("grade >= 2" in note for note in metrics_table(back).notes)
    # A file written before the two fields existed reads as trec_eval's defaults.
    del data["metrics"]["relevance_level"], data["metrics"]["judged_only"]
    old = BenchmarkResult.from_dict(data)
    assert (old.relevance_level, old.judged_only) == (1, False)
    assert not any("trec_eval -" in note for note in metrics_table(old).notes)
    data["metrics"]["relevance_level"] = "two"
    with pytest.raises(ResultFileError, match="metrics.relevance_level"):
        BenchmarkResult.from_dict(data)


def test_values_outside_a_metrics_bounds_are_refused_for_every_share(tiny_dataset, tmp_path):
    # bpref, f1, err, infap and ndcg_exp were missing from the old hand-kept list of shares.
    names = ["bpref", "f1@3", "err@3", "infap", "ndcg_exp@3", "num_ret"]
    result = run_benchmark(OverlapRetriever, load_dataset(tiny_dataset), k=5, metrics=names, latency_sample=None)
    for name in names[:-1]:
        data = json.loads(json.dumps(result.to_dict()))
        data["queries"][0]["metrics"][name] = 1.5
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(data))
        with pytest.raises(ResultFileError, match=rf"metric '{name}' is 1.5, outside \[0, 1\]"):
            BenchmarkResult.load(path)
    data = json.loads(json.dumps(result.to_dict()))
    data["queries"][0]["metrics"]["num_ret"] = 7e9  # a count: bounded below only
    path.write_text(json.dumps(data))
    BenchmarkResult.load(path)
    data["queries"][0]["metrics"]["num_ret"] = -1
    path.write_text(json.dumps(data))
    with pytest.raises(ResultFileError, match=r"outside \[0, inf\]"):
        BenchmarkResult.load(path)
