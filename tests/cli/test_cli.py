"""The command line: eval, score, plugins, list, dataset validate/stats, and every error path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import OverlapRetriever
from typer.testing import CliRunner

from recall_kit import Hit, Retriever, hookimpl, load_result
from recall_kit.cli import get_app
from recall_kit.measure.systems.system import (
    SystemSpec,
    load_config,
    merge_specs,
    parse_option_assignments,
    parse_weights,
)
from recall_kit.testing import registered_plugin

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(get_app(), list(args))


def test_eval_writes_json_run_and_table(overlap_plugin, tiny_dataset, tmp_path):
    out, run = tmp_path / "r.json", tmp_path / "r.trec"
    result = invoke("eval", "--dataset", str(tiny_dataset), "--retriever", "overlap", "--k", "5",
                    "--json", str(out), "--run", str(run), "-o", "overlap.min_overlap=2")
    assert result.exit_code == 0, result.output
    for stratum in ("overall", "exact", "paraphrase", "multihop"):
        assert stratum in result.stdout
    assert load_result(out).system.legs[0].options == {"min_overlap": 2, "boost": 0.0}
    assert run.read_text().splitlines()[0].split()[:3] == ["e1", "Q0", "1"]


@pytest.mark.parametrize("report", ["markdown", "csv", "json"])
def test_eval_reports(overlap_plugin, tiny_dataset, report):
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "overlap", "--report", report)
    assert result.exit_code == 0, result.output
    if report == "json":
        assert json.loads(result.stdout)["schema"] == "recall-kit/result/1"
    elif report == "markdown":
        assert "| stratum" in result.stdout
    else:
        assert "stratum,n," in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-r", "grph"], "Unknown retriever 'grph'. Available:"),
        (["-r", "overlap", "--report", "pdf"], "Unknown reporter 'pdf'. Available: csv,"),
        (["-r", "overlap", "--metrics", "recal@10"], "Unknown metric 'recal'"),
        (["-r", "overlap", "-o", "overlap.nope=1"], "Unknown option 'nope' for retriever 'overlap'. Available: boost, min_overlap."),
        (["-r", "overlap", "-o", "overlap.min_overlap=many"], "expected an integer"),
        (["-r", "overlap", "-o", "broken"], "Bad option 'broken': expected NAME.KEY=VALUE"),
        (["-r", "overlap", "-o", "dense.model=x"], "Option for 'dense', which is not a leg or fusion"),
        (["-r", "overlap", "--weights", "overlap=-1"], "weights are finite and >= 0"),
        (["-r", "overlap", "--fusion", "nofusion"], "Unknown fusion 'nofusion'"),
        (["-r", "overlap+overlap"], "leg 'overlap' appears twice"),
        (["-r", "no.such.module:Thing"], "Cannot import 'no.such.module'"),
        ([], "Missing --retriever"),
        (["-r", "overlap", "--k", "0"], "k must be at least 1"),
        (["-r", "overlap", "--latency-sample", "-5"], "--latency-sample -5 is not a query count"),
    ],
)
def test_user_mistakes_are_one_line_and_exit_2(overlap_plugin, tiny_dataset, args, message):
    result = invoke("eval", "--dataset", str(tiny_dataset), *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_bad_dataset_and_missing_dataset(overlap_plugin, tiny_dataset, tmp_path):
    (tiny_dataset / "qrels.jsonl").write_text('{"query_id": "e1", "relevant_ids": [77]}\n')
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "overlap")
    assert result.exit_code == 2
    assert "qrels.jsonl:1: id 77 (query e1) is not in corpus.jsonl" in result.stderr
    missing = invoke("eval", "-d", str(tmp_path / "none"), "-r", "overlap")
    assert missing.exit_code == 2 and "not a dataset folder" in missing.stderr


class Exploding(Retriever):
    def build_index(self, corpus):  # type: ignore[no-untyped-def]
        pass

    def search(self, query: str, k: int) -> list[Hit]:
        raise ValueError("boom")


class ExplodingPlugin:
    @hookimpl
    def register_retrievers(self, register):  # type: ignore[no-untyped-def]
        register("exploding", Exploding)


def test_plugin_raising_mid_run_leaves_no_output_file(tiny_dataset, tmp_path):
    out = tmp_path / "result.json"
    with registered_plugin(ExplodingPlugin(), name="exploding-plugin"):
        result = invoke("eval", "-d", str(tiny_dataset), "-r", "exploding", "--json", str(out))
        assert result.exit_code == 2
        assert "Retriever 'exploding' failed on a batch of queries: ValueError (message withheld" in result.stderr
        assert "boom" not in result.stderr
        assert not out.exists() and list(tmp_path.iterdir()) == [tiny_dataset]
        debug = runner.invoke(get_app(), ["--debug", "eval", "-d", str(tiny_dataset), "-r", "exploding"])
        assert debug.exception is not None  # --debug lets the traceback through


def test_composition_parsing_and_config(tmp_path):
    assert parse_weights("fts5=1, dense=0.5") == {"fts5": 1.0, "dense": 0.5}
    assert parse_option_assignments(["dense.model=a=b", "pkg.mod:Cls.depth=3"]) == {
        "dense": {"model": "a=b"}, "pkg.mod:Cls": {"depth": "3"}}
    config = tmp_path / "exp.toml"
    config.write_text(
        '[system]\nretriever = "fts5+dense"\nfusion = ["rrf", "exact-bonus"]\n'
        '[weights]\ndense = 0.5\n[options.rrf]\nk = 10\n[options.dense]\nmodel = "m"\n'
    )
    spec = load_config(config)
    assert spec == SystemSpec("fts5+dense", ["rrf", "exact-bonus"], {"dense": 0.5}, {"rrf": {"k": 10}, "dense": {"model": "m"}})
    merged = merge_specs(spec, SystemSpec("", [], {"fts5": 2.0}, {"rrf": {"k": "60"}}))
    assert merged.retriever == "fts5+dense" and merged.fusions == ["rrf", "exact-bonus"]
    assert merged.weights == {"dense": 0.5, "fts5": 2.0}
    assert merged.options == {"rrf": {"k": "60"}, "dense": {"model": "m"}}
    assert merged.label == "fts5+dense (rrf > exact-bonus)"


def test_a_flag_that_replaces_the_files_fusion_or_legs_drops_their_options():
    # examples/systems/hybrid.toml with -f rrf: the file's [options.convex] belonged to the
    # fusion the flag replaced ("Option for 'convex', which is not a leg or fusion" before).
    base = SystemSpec("bm25+dense", ["convex"], {"bm25": 1.0, "dense": 0.7},
                      {"convex": {"norm": "minmax"}, "bm25": {"k1": 1.5}, "dense": {"context": {"window": 1}}})
    merged = merge_specs(base, SystemSpec("", ["rrf"], {}, {"rrf": {"k": "10"}}))
    assert merged.fusions == ["rrf"] and merged.weights == {"bm25": 1.0, "dense": 0.7}
    assert merged.options == {"bm25": {"k1": 1.5}, "dense": {"context": {"window": 1}}, "rrf": {"k": "10"}}
    legs = merge_specs(base, SystemSpec("bm25+fts5", [], {}, {}))
    assert legs.options == {"convex": {"norm": "minmax"}, "bm25": {"k1": 1.5}}
    assert legs.weights == {"bm25": 1.0} and legs.fusions == ["convex"]



def test_config_file_drives_eval(overlap_plugin, tiny_dataset, tmp_path):
    config = tmp_path / "exp.toml"
    config.write_text('[system]\nretriever = "overlap"\n[options.overlap]\nboost = 1.5\n')
    out = tmp_path / "r.json"
    result = invoke("eval", "-d", str(tiny_dataset), "--config", str(config), "--json", str(out))
    assert result.exit_code == 0, result.output
    assert load_result(out).system.legs[0].options["boost"] == 1.5
    bad = tmp_path / "bad.toml"
    bad.write_text("[system\n")
    broken = invoke("eval", "-d", str(tiny_dataset), "--config", str(bad))
    assert broken.exit_code == 2 and "bad.toml: not valid TOML" in broken.stderr
    bad.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")  # before: "unexpected RecursionError"
    broken = invoke("eval", "-d", str(tiny_dataset), "--config", str(bad))
    assert broken.exit_code == 2 and "bad.toml: not valid TOML (nested too deeply)" in broken.stderr, broken.stderr


def test_module_path_retriever_without_entry_point(tiny_dataset):
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "helpers:OverlapRetriever", "-o", "helpers:OverlapRetriever.boost=1")
    assert result.exit_code == 0, result.output
    assert "helpers:OverlapRetriever" in result.stdout


def test_list_plugins_and_dataset_commands(overlap_plugin, tiny_dataset):
    listed = invoke("list", "retrievers")
    assert "overlap" in listed.stdout and "overlap-plugin" in listed.stdout
    assert invoke("list", "metrics").stdout.count("recall") >= 2
    bad_kind = invoke("list", "widgets")
    assert bad_kind.exit_code == 2 and "Unknown kind 'widgets'" in bad_kind.stderr
    plugins = json.loads(invoke("plugins", "--json").stdout)
    names = {p["name"] for p in plugins["plugins"]}
    assert "overlap-plugin" in names and "recall_kit.default_plugins.metrics" in names
    valid = invoke("dataset", "validate", str(tiny_dataset))
    assert valid.exit_code == 0 and "ok: 5 memories (1 sensitive dropped), 4 queries in 3 strata" in valid.stdout
    stats = invoke("dataset", "stats", str(tiny_dataset), "--json")
    assert json.loads(stats.stdout)["queries"] == 4
    assert "ClickHouse" not in stats.stdout


def test_dataset_validate_lists_every_problem(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text('{"id": 1, "content": "a"}\n{"id": 1, "content": "b"}\nnot json\n')
    (folder / "queries.jsonl").write_text('{"query_id": "q", "text": "a"}\n')
    (folder / "qrels.jsonl").write_text('{"query_id": "q", "relevant_ids": [2]}\n')
    result = invoke("dataset", "validate", str(folder))
    assert result.exit_code == 2 and "unexpected" not in result.stderr
    assert "corpus.jsonl:2: duplicate id 1 (first on line 1)" in result.stderr
    assert "corpus.jsonl:3: not valid JSON" in result.stderr
    assert "qrels.jsonl:1: id 2 (query q) is not in corpus.jsonl" in result.stderr


def test_real_subprocess_error_has_no_traceback(tiny_dataset):
    env = dict(os.environ, RECALL_KIT_LOAD_PLUGINS="")
    done = subprocess.run([sys.executable, "-m", "recall_kit", "eval", "-d", str(tiny_dataset), "-r", "grph"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("Error: Unknown retriever 'grph'. Available:")
    assert "Traceback" not in done.stderr


def test_strange_queries_do_not_crash(tmp_path, overlap_plugin):
    from helpers import CORPUS, write_dataset

    strange = ['', '"', "NEAR(a b)", "content:x", "\x00\x07", "😀" * 50, "a" * 10000, "AND OR NOT *^"]
    queries = [{"query_id": f"s{i}", "text": text} for i, text in enumerate(strange)]
    qrels = [{"query_id": f"s{i}", "relevant_ids": [1]} for i in range(len(strange))]
    folder = write_dataset(tmp_path / "strange", CORPUS, queries, qrels)
    result = invoke("eval", "-d", str(folder), "-r", "overlap")
    assert result.exit_code == 0, result.output


def test_overlap_is_a_real_ranking():
    retriever = OverlapRetriever()
    from recall_kit import Corpus, Memory

    retriever.build_index(Corpus([Memory("1", "a b c"), Memory("2", "a"), Memory("3", "z")]))
    assert [h.id for h in retriever.search("a b", 5)] == ["1", "2"]


@pytest.mark.parametrize("args", [["--help"], ["eval", "--help"], ["dataset", "validate", "--help"]])
def test_help_exits_zero_without_error(args):
    result = invoke(*args)
    assert result.exit_code == 0 and "Error" not in result.output


# ---- trec_eval's -l and -J, and trec_eval / ir_measures metric names ----------------------------


def _trec_files(tmp_path: Path) -> tuple[Path, Path]:
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    # q1: a (2), b (1), n (0), p (-1: pooled, not judged); u is in no qrels line.
    qrels.write_text("q1 0 a 2\nq1 0 b 1\nq1 0 n 0\nq1 0 p -1\nq2 0 c 1\n")
    run.write_text("q1 Q0 u 1 5 t\nq1 Q0 b 2 4 t\nq1 Q0 p 3 3 t\nq1 Q0 a 4 2 t\nq1 Q0 n 5 1 t\n"
                   "q2 Q0 c 1 1 t\n")
    return qrels, run


def test_score_takes_trec_eval_names_relevance_level_and_judged_only(tmp_path):
    import pytrec_eval

    qrels, run = _trec_files(tmp_path)
    out = tmp_path / "score.json"
    result = invoke("score", "--qrels", str(qrels), "--run", str(run), "-m", "P_2,recip_rank,nDCG@5,num_ret,bpref",
                    "-l", "2", "-J", "--per-query", "--json", str(out))
    assert result.exit_code == 0, result.output
    # The tables show each measure by the name it was asked by; the JSON keeps recall-kit's.
    assert "P_2" in result.stdout and "nDCG@5" in result.stdout and "precision@2" not in result.stdout
    data = json.loads(out.read_text())
    assert data["relevance_level"] == 2 and data["judged_only"] is True
    # By hand: -J leaves b, a, n for q1 (u unjudged, p pooled but unjudged); with -l 2 only a is
    # relevant: P_2 = 1/2, recip_rank = 1/2; q2's c (1) is not relevant at level 2.
    assert data["queries"]["q1"]["precision@2"] == 0.5 and data["queries"]["q1"]["mrr"] == 0.5
    assert data["queries"]["q2"]["mrr"] == 0.0
    assert data["overall"]["num_ret"] == 4  # a total, as trec_eval's "all" line: 3 + 1
    evaluator = pytrec_eval.RelevanceEvaluator(
        {"q1": {"a": 2, "b": 1, "n": 0, "p": -1}, "q2": {"c": 1}}, {"P.2", "recip_rank", "ndcg_cut.5", "bpref"},
        relevance_level=2, judged_docs_only_flag=True)
    expected = evaluator.evaluate({"q1": {"u": 5, "b": 4, "p": 3, "a": 2, "n": 1}, "q2": {"c": 1}})
    for ours, theirs in [("precision@2", "P_2"), ("mrr", "recip_rank"), ("ndcg@5", "ndcg_cut_5"), ("bpref", "bpref")]:
        for query_id in ("q1", "q2"):
            assert data["queries"][query_id][ours] == pytest.approx(expected[query_id][theirs], abs=1e-4)


def test_a_long_error_is_cut_at_a_word_and_says_how_much_was_left_out():
    from recall_kit.cli import _one_line

    assert _one_line(ValueError("short one")) == "short one"
    cut = _one_line(ValueError("word " * 400))
    assert cut.startswith("word word") and cut.endswith(" ... (1,100 more characters)") and len(cut) < 1000
    assert "wor ..." not in cut


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-l", "0"], "relevance level must be a whole number >= 1"),
        (["-m", "ndcg_cut10"], "Unknown metric 'ndcg_cut10'. Did you mean 'ndcg_cut_10'?"),
        (["-m", "Rprec@5"], "Metric 'r_precision' takes no cutoff"),
    ],
)
def test_score_bad_options_are_one_line(tmp_path, args, message):
    qrels, run = _trec_files(tmp_path)
    result = invoke("score", "--qrels", str(qrels), "--run", str(run), *args)
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_eval_takes_aliases_relevance_level_and_judged_only(overlap_plugin, tiny_dataset, tmp_path):
    out = tmp_path / "r.json"
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "overlap", "--k", "5",
                    "-m", "recall_5,ndcg_cut_5,RR,num_rel", "-l", "2", "-J", "--json", str(out))
    assert result.exit_code == 0, result.output
    assert "grade >= 2" in result.stdout and "judged only" in result.stdout
    scored = load_result(out)
    assert scored.metric_names == ["recall@5", "ndcg@5", "mrr", "num_rel"]
    assert scored.relevance_level == 2 and scored.judged_only is True
    # Only m1's id 1 has grade >= 2: one relevant document in all.
    assert scored.mean("num_rel") == 1
    assert scored.per_query("num_rel")["e1"] == 0 and scored.per_query("num_rel")["m1"] == 1
    # -J: every id left in a scored ranking is judged, so recall@5 is the found share of {1}.
    from recall_kit.measure.score.evaluation import judge_rankings, metric_values, resolve_metrics

    qrels = {"e1": {"1": 1}, "e2": {"4": 1}, "p1": {"3": 1}, "m1": {"1": 2, "2": 1, "5": 0}}
    ids = [scored.rankings()[q] for q in ("e1", "e2", "p1", "m1")]
    values = metric_values(judge_rankings(["e1", "e2", "p1", "m1"], ids, qrels, relevance_level=2, judged_only=True),
                      resolve_metrics(["recall@5", "ndcg@5", "mrr"]))
    for name in ("recall@5", "ndcg@5", "mrr"):
        assert scored.mean(name) == pytest.approx(float(values[name].mean()))


def test_list_metrics_shows_aliases():
    listed = invoke("list", "metrics", "--json")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert "ndcg_cut_k" in rows["ndcg"]["aliases"] and "P@k" in rows["precision"]["aliases"]
    assert {"bpref", "infap", "err", "ndcg_exp", "f1", "num_ret", "num_rel", "num_rel_ret"} <= set(rows)
def _two_runs(tmp_path):
    """Four queries, one relevant id each. mrr of run A: 1, 1/2, 1, 0; of run B: 1, 1, 1/2, 1."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq2 0 b 1\nq3 0 c 1\nq4 0 d 1\n")
    run_a, run_b = tmp_path / "A.run", tmp_path / "B.run"
    run_a.write_text("q1 Q0 a 1 2 A\nq2 Q0 x 1 2 A\nq2 Q0 b 2 1 A\nq3 Q0 c 1 2 A\nq4 Q0 y 1 2 A\n")
    run_b.write_text("q1 Q0 a 1 2 B\nq2 Q0 b 1 2 B\nq3 Q0 x 1 2 B\nq3 Q0 c 2 1 B\nq4 Q0 d 1 2 B\n")
    return qrels, run_a, run_b


def test_score_several_runs_one_table_and_the_paired_comparison(tmp_path):
    qrels, run_a, run_b = _two_runs(tmp_path)
    out = tmp_path / "score.json"
    result = invoke("score", "--qrels", str(qrels), "--run", str(run_a), "--run", str(run_b),
                    "-m", "mrr,recall@1", "--json", str(out))
    assert result.exit_code == 0, result.output
    assert "B.run vs A.run (baseline)" in result.stdout and "W/T/L" in result.stdout
    data = json.loads(out.read_text())
    assert [run["overall"]["mrr"] for run in data["runs"]] == [0.625, 0.875]
    row = next(r for r in data["comparison"]["rows"] if r["metric"] == "mrr")
    # Differences 0, +1/2, -1/2, +1: delta 1/4; exact test over 2**4 sign flips: |sum| >= 1 for
    # 6 of the 8 patterns of the three non-zero differences, so p = 3/4.
    assert row["delta"] == 0.25 and row["family"] == "primary"
    assert (row["wins"], row["ties"], row["losses"]) == (2, 1, 1)
    assert row["p_value"] == 0.75
    assert data["comparison"]["losses"]["B.run"]["mrr"] == [
        {"query_id": "q3", "baseline": 1.0, "value": 0.5, "delta": -0.5}]
    # The same numbers compare gives for the same per-query values.
    from recall_kit.decide.compare import compare_values

    same = compare_values(["A.run", "B.run"], ["q1", "q2", "q3", "q4"], None,
                          {"mrr": [np.array([1, 0.5, 1, 0]), np.array([1, 1, 0.5, 1.0])]})
    assert same.rows[0].to_dict() == row


def test_score_warns_of_a_cutoff_past_the_run_and_offers_float64_ties(tmp_path):
    qrels, run_a, _ = _two_runs(tmp_path)
    out = tmp_path / "one.json"
    result = invoke("score", "--qrels", str(qrels), "--run", str(run_a), "-m", "recall@1,recall@100",
                    "--json", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["overall"]["recall@100"] == 0.75 and data["ties"] == "float32"
    assert data["warnings"] == ["recall@100: cutoff past the deepest ranking in A.run (2 documents); "
                                "it counts only the documents there, as at @2."]
    # 1.0 + 1e-9 and 1.0 tie as float32 (id descending: b first), not as float64 (a first).
    (tmp_path / "tie.run").write_text(f"q1 Q0 a 1 {1.0 + 1e-9!r} t\nq1 Q0 b 2 1.0 t\n")
    for ties, expected in (("float32", "0.5000"), ("float64", "1.0000")):
        result = invoke("score", "--qrels", str(qrels), "--run", str(tmp_path / "tie.run"), "-m", "mrr",
                        "--ties", ties)
        assert result.exit_code == 0 and expected in result.stdout, result.output
    bad = invoke("score", "--qrels", str(qrels), "--run", str(run_a), "--ties", "float16")
    assert bad.exit_code == 2 and "--ties must be one of float32, float64" in bad.output


@pytest.mark.parametrize(
    ("run_text", "args", "message"),
    [
        ("q9 Q0 a 1 1.0 t\n", [], "none of its 1 queries is in qrels.txt (2 queries): nothing to score"),
        ("q9 Q0 a 1 1.0 t\n", ["--complete"], "none of its 1 queries is in qrels.txt"),
        ("  \n\t\n", [], "run.txt: holds no result line: nothing to score"),
    ],
)
def test_score_refuses_a_run_that_shares_no_query_with_the_qrels(tmp_path, run_text, args, message):
    # Before: "all 0.0000", n = 0, exit 0; trec_eval 9 exits 7 ("No queries with both results
    # and relevance info").
    qrels, run = _trec_files(tmp_path)
    run.write_text(run_text)
    result = invoke("score", "--qrels", str(qrels), "--run", str(run), *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["", ",,", " , "])
def test_an_empty_metric_list_is_refused_not_read_as_the_defaults(tmp_path, value):
    qrels, run = _trec_files(tmp_path)
    result = invoke("score", "--qrels", str(qrels), "--run", str(run), "-m", value)
    assert result.exit_code == 2, result.output
    assert "names no metric" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_evaluate_warns_when_no_query_has_both_results_and_judgments():
    import recall_kit
    from recall_kit.errors import RecallKitWarning

    with pytest.warns(RecallKitWarning, match="no query has both results and judgments"):
        assert recall_kit.evaluate({"q1": ["a"]}, {"q2": ["a"]}, "mrr") == {"mrr": 0.0}


def test_score_takes_trec_eval_flags_all_trec_q_c_and_M(tmp_path):
    import pytrec_eval

    qrels, run = _trec_files(tmp_path)
    out = tmp_path / "s.json"
    result = invoke("score", "--qrels", str(qrels), "--run", str(run), "-m", "all_trec", "-q", "-c", "-M", "2",
                    "--json", str(out))
    assert result.exit_code == 0, result.output
    assert "not computed" in result.stdout and "relstring" in result.stdout
    data = json.loads(out.read_text())
    assert data["depth"] == 2 and "iprec_at_recall@50" in data["queries"]["q1"]
    # -M 2: q1 is u, b (the run's top two by score); pytrec_eval on that cut run agrees.
    expected = pytrec_eval.RelevanceEvaluator(
        {"q1": {"a": 2, "b": 1, "n": 0, "p": -1}, "q2": {"c": 1}}, {"P.5", "recip_rank", "num_ret", "set_P"}
    ).evaluate({"q1": {"u": 5, "b": 4}, "q2": {"c": 1}})
    for query_id in ("q1", "q2"):
        assert data["queries"][query_id]["precision@5"] == pytest.approx(expected[query_id]["P_5"])
        assert data["queries"][query_id]["mrr"] == pytest.approx(expected[query_id]["recip_rank"])
        assert data["queries"][query_id]["set_precision"] == pytest.approx(expected[query_id]["set_P"])
    assert data["overall"]["num_ret"] == 3
    bad = invoke("score", "--qrels", str(qrels), "--run", str(run), "-M", "0")
    assert bad.exit_code == 2 and "-M (the depth scored) must be a whole number >= 1" in bad.stderr


def test_eval_per_query_flag_shows_each_query(overlap_plugin, tiny_dataset):
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "overlap", "--k", "5", "-m", "mrr", "-q")
    assert result.exit_code == 0, result.output
    assert "per query" in result.stdout
    for query_id in ("e1", "e2", "p1", "m1"):
        assert query_id in result.stdout


def test_the_old_spellings_work_exactly_where_the_user_guide_says():
    import typer.main

    from recall_kit.cli import app

    group = typer.main.get_command(app)

    def opts(*path: str) -> set[str]:
        command = group
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        return {opt for param in command.params for opt in getattr(param, "opts", [])}

    guide = " ".join((Path(__file__).resolve().parents[2] / "docs" / "user-guide.md").read_text(encoding="utf-8").split())
    assert ("`--out` of `ablate`, `sweep` and `dataset generate` (now `--out-dir`), `--output` of `pool` and "
            "`judge` (now `--out`)") in guide
    for path in (("ablate",), ("sweep",), ("dataset", "generate")):
        assert {"--out", "--out-dir"} <= opts(*path), path
    for path in (("pool",), ("judge",)):
        assert {"--out", "--output"} <= opts(*path), path
    for path in (("eval",), ("compare",), ("gate",), ("score",)):
        assert "--out" not in opts(*path), path
