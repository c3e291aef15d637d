"""The plugin end to end through the real `llm` code path: generate the paraphrase and multi-hop
strata, judge a pool with a model, compare judges, refuse what must be refused without leaving
files. The scripted model (conftest.py) stands in for a language model; the quality of generation
and judging is not measured here."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from recall_kit.testing import example_datasets, invoke_cli


def _store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    store.mkdir(parents=True)
    shutil.copyfile(example_datasets()["memories"] / "corpus.jsonl", store / "corpus.jsonl")
    return store


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _report(output: str, name: str) -> dict[str, int]:
    """The counts of a generator's report line (kept, calls, cached, and each rejection reason)."""
    line = next(line for line in output.splitlines() if line.startswith(f"{name}: ") and " kept; " in line)
    found = re.match(rf"{name}: (\d+) kept; (\d+) model calls, (\d+) from the cache; answers rejected: (.*?); ", line)
    assert found, line
    counts = {"kept": int(found.group(1)), "calls": int(found.group(2)), "cached": int(found.group(3))}
    for part in found.group(4).split(", "):
        if part != "none":
            reason, number = part.rsplit(" ", 1)
            counts[reason] = int(number)
    return counts


def test_generate_paraphrase_and_multihop_with_provenance_and_a_free_rerun(llm_home, scripted_model, tmp_path):
    store = _store(tmp_path)
    result = invoke_cli(["dataset", "generate", str(store), "--paraphrase", "4", "--multihop", "3",
                                 "--model", "recall-test", "-o", "llm-paraphrase.retry_wait=0", "--seed", "2",
                                 "-o", f"llm-paraphrase.sample_file={tmp_path / 'sample.jsonl'}"])
    assert result.exit_code == 0, result.output
    queries = _rows(store / "queries.jsonl")
    qrels = {row["query_id"]: row["relevant_ids"] for row in _rows(store / "qrels.jsonl")}
    paraphrase = [q for q in queries if q["stratum"] == "paraphrase"]
    multihop = [q for q in queries if q["stratum"] == "multihop"]
    assert len(paraphrase) == 4 and len(multihop) == 3
    for query in queries:
        assert query["_model"] == "recall-test" and query["_prompt_version"]
        assert query["_overlap"] <= (0.18 if query["stratum"] == "paraphrase" else 0.35)
        assert [str(i) for i in qrels[query["query_id"]]] == [str(i) for i in query["_seed_ids"]]
    assert all(len(q["_seed_ids"]) == 2 for q in multihop)
    # The answer the model gave with its question (whitespace tidied) is the query's; none given, none kept.
    assert all(q["answer"] and q["answer"] in q["text"] and q["answer"] == q["answer"].strip() for q in paraphrase)
    assert not any("answer" in q for q in multihop)
    # Each kept paraphrase was judged about its memory by the model judge (the scripted one: 3).
    assert all(q["_about_grade"] == 3 and q["_about_judge"] == "recall-test" for q in paraphrase)
    assert not any(q["text"] == scripted_model.off_topic for q in queries)
    report = _report(result.output, "llm-paraphrase")
    # Each seed: the first answer copied the memory (rejected, too close), the second was judged;
    # off-topic ones (judged 0) were dropped: 3 calls a seed, and 3 multi-hop calls.
    off = report.get("not_about_its_memory", 0)
    assert off >= 1  # seed 2 meets at least one memory the scripted model misses
    assert report["too_close"] == 4 + off and report["kept"] == 4
    calls = scripted_model.calls
    assert report["calls"] == 3 * (4 + off) and calls == report["calls"] + 3
    # The sample (kept and dropped questions beside their memories) went to the file, not stdout.
    sample = _rows(tmp_path / "sample.jsonl")
    assert sum(row["kept"] for row in sample) == 4 and sum(not row["kept"] for row in sample) == off
    assert not any(row["memory"] in result.stdout for row in sample)
    lint = invoke_cli(["dataset", "lint", str(store), "--min-queries", "1"])
    assert "paraphrase_overlap: 0" in lint.output, lint.output
    fresh = _store(tmp_path / "b")
    rerun = invoke_cli(["dataset", "generate", str(fresh), "--paraphrase", "4", "--multihop", "3",
                                "--model", "recall-test", "--seed", "2"])
    assert rerun.exit_code == 0, rerun.output
    assert scripted_model.calls == calls  # every answer came from the cache
    assert _rows(fresh / "queries.jsonl") == queries


def test_every_answer_rejected_stops_early_and_says_why(llm_home, tmp_path):
    # llm-echo answers with its prompt as JSON: no `question`, so off the schema, every time.
    store = _store(tmp_path)
    for name in ("queries.jsonl", "qrels.jsonl"):
        shutil.copyfile(example_datasets()["memories"] / name, store / name)
    result = invoke_cli(["dataset", "generate", str(store), "--paraphrase", "10", "--model", "echo",
                         "-o", "llm-paraphrase.retry_wait=0"])
    assert result.exit_code == 0, result.output
    limit = 2 * 10 + 10  # seeds that may fail before it stops (max_failed_seeds' default)
    seeds = 10 + limit  # at most: every success and every failure allowed
    assert f"llm-paraphrase: at most {seeds * 3 * 2} model calls ({seeds} seeds x 3 tries, each question then judged" \
        in result.output
    report = _report(result.output, "llm-paraphrase")
    assert report == {"kept": 0, "calls": limit * 3, "cached": 0, "malformed": limit * 3}
    assert f"stopped after {limit} seeds gave no question" in result.output
    assert "llm-paraphrase: 0 of 10 queries written (the generator gave no more: see its report above)" in result.output


def test_the_about_check_can_be_turned_off(llm_home, scripted_model, tmp_path):
    store = _store(tmp_path)
    result = invoke_cli(["dataset", "generate", str(store), "--paraphrase", "4", "--model", "recall-test",
                         "--seed", "2", "-o", "llm-paraphrase.about=false"])
    assert result.exit_code == 0, result.output
    queries = _rows(store / "queries.jsonl")
    assert any(q["text"] == scripted_model.off_topic for q in queries)  # low overlap alone keeps a question about nothing
    assert all("_about_grade" not in q for q in queries)
    report = _report(result.output, "llm-paraphrase")
    # A second seed the scripted model misses asked the same question: dropped as a duplicate.
    assert report["duplicate"] >= 1 and report["kept"] == 4
    assert scripted_model.calls == report["calls"] and f"at most {(4 + 2 * 4 + 10) * 3} model calls ({4 + 2 * 4 + 10} seeds x 3 tries;" in result.output


def test_unknown_model_and_remote_model_leave_no_file(llm_home, tmp_path):
    store = _store(tmp_path)
    result = invoke_cli(["dataset", "generate", str(store), "--paraphrase", "2", "--model", "nope"])
    assert result.exit_code == 2
    assert "Unknown model 'nope': see 'llm models'" in result.output and len(result.output.splitlines()) == 1
    result = invoke_cli(["dataset", "generate", str(store), "--paraphrase", "2", "--model", "gpt-4o-mini"])
    assert result.exit_code == 2 and "--allow-remote" in result.output
    result = invoke_cli(["dataset", "generate", str(store), "--paraphrase", "2", "--model", "gpt-4o-mini",
                                 "--allow-remote"])
    assert result.exit_code == 2 and "llm keys set openai" in result.output
    assert sorted(p.name for p in store.iterdir()) == ["corpus.jsonl"]
    result = invoke_cli(["dataset", "generate", str(store), "--exact", "2", "--model", "recall-test"])
    assert result.exit_code == 2 and "takes no --model" in result.output


def _pool(tmp_path: Path) -> tuple[Path, Path]:
    dataset = example_datasets()["memories"]
    queries = _rows(dataset / "queries.jsonl")[:3]
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({"query_id": q["query_id"], "doc_ids": [1, 2, 3, 4]}) + "\n" for q in queries))
    return dataset, pool


def test_model_judge_writes_graded_qrels_with_provenance_and_resumes(llm_home, scripted_model, tmp_path):
    dataset, pool = _pool(tmp_path)
    out = tmp_path / "model.jsonl"
    args = ["judge", str(pool), "-d", str(dataset), "--out", str(out), "--model", "recall-test"]
    result = invoke_cli(args)
    assert result.exit_code == 0, result.output
    rows = _rows(out)
    assert len(rows) == 3
    for row in rows:
        assert set(row["relevance"]) == {"1", "2", "3", "4"}
        assert all(0 <= g <= 3 for g in row["relevance"].values())
        assert row["_judge_model"] == "recall-test" and row["_judge_prompt_version"] == "judge-2"
    calls = scripted_model.calls
    assert calls == 12
    again = invoke_cli(args)
    assert again.exit_code == 0 and scripted_model.calls == calls  # resumed: nothing left to ask
    assert "12 of 12 pairs already judged" in again.output
    # agreement with itself on a copy: perfect (or undefined when every grade is one value)
    person = tmp_path / "person.jsonl"
    person.write_text(out.read_text())
    agree = invoke_cli(["agreement", str(out), str(person), "--json", str(tmp_path / "a.json")])
    assert agree.exit_code == 0, agree.output
    assert json.loads((tmp_path / "a.json").read_text())["n"] == 12
    assert not (llm_home / "logs.db").exists()


def test_judge_with_a_model_that_answers_nonsense_is_a_failure_and_writes_nothing(llm_home, tmp_path):
    # Every answer unusable (issue 37): not "Saved 0 new grades" with exit 0, but exit 2, one line,
    # no qrels file and no journal; each pair was asked its `tries` times (2 x 12 calls).
    dataset, pool = _pool(tmp_path)
    out = tmp_path / "echo.jsonl"
    result = invoke_cli(["judge", str(pool), "-d", str(dataset), "--out", str(out), "--model", "echo",
                                 "-o", "llm.tries=2"])
    assert result.exit_code == 2, result.output
    assert "The judge gave no usable answer for any of the 12 pairs it was asked" in result.output
    assert "judge: 24 model calls" in result.output
    assert not out.exists() and not Path(str(out) + ".journal").exists()


def test_judge_unknown_model_leaves_no_file(llm_home, tmp_path):
    dataset, pool = _pool(tmp_path)
    out = tmp_path / "q.jsonl"
    result = invoke_cli(["judge", str(pool), "-d", str(dataset), "--out", str(out), "--model", "nope"])
    assert result.exit_code == 2 and "Unknown model 'nope'" in result.output
    assert not out.exists() and not Path(str(out) + ".journal").exists()


def test_lint_flags_a_paraphrase_that_leaks_its_memory_words(llm_home, tmp_path):
    # With the overlap check off, the scripted model's first answer (the memory's own words) is kept.
    store = _store(tmp_path)
    result = invoke_cli(["dataset", "generate", str(store), "--paraphrase", "3", "--model", "recall-test",
                                 "-o", "llm-paraphrase.max_overlap=1"])
    assert result.exit_code == 0, result.output
    assert all(q["_overlap"] > 0.18 for q in _rows(store / "queries.jsonl"))
    lint = invoke_cli(["dataset", "lint", str(store), "--min-queries", "1"])
    assert lint.exit_code == 1 and "paraphrase_overlap: 3" in lint.output


def test_sensitive_rows_never_reach_the_model(llm_home, scripted_model, tmp_path):
    store = _store(tmp_path)
    secret = "Nadia Orlov keeps the vault code 7731 under the blue lamp in Tallinn today."
    with (store / "corpus.jsonl").open("a") as corpus:
        corpus.write(json.dumps({"id": 99999, "content": secret, "tags": "vault", "is_sensitive": True}) + "\n")
    result = invoke_cli(["dataset", "generate", str(store), "--paraphrase", "40", "--model", "recall-test",
                                 "--seed", "5"])
    assert result.exit_code == 0, result.output
    assert scripted_model.prompts and not any("vault code" in prompt for prompt in scripted_model.prompts)


def test_judge_failing_with_the_prompt_in_its_error_prints_no_memory_or_query_text(llm_home, tmp_path, monkeypatch):
    """A model whose exception quotes the prompt (as an SDK's "invalid request" does): the judge
    names the failure's kind, never its text."""
    import llm
    from llm.plugins import pm

    class QuotingModel(llm.Model):
        model_id = "recall-quoting"

        def execute(self, prompt, stream, response, conversation=None):
            raise ValueError("rejected request: " + " ".join(prompt.prompt.split()))

    class Plugin:
        @llm.hookimpl
        def register_models(self, register):
            register(QuotingModel())

    monkeypatch.setenv("RECALL_KIT_LLM_LOCAL", "recall-test,recall-test-embed,recall-quoting")
    pm.register(Plugin(), name="recall-kit-quoting-model")
    try:
        dataset, pool = _pool(tmp_path)
        out = tmp_path / "quoting.jsonl"
        result = invoke_cli(["judge", str(pool), "-d", str(dataset), "--out", str(out), "--model", "recall-quoting"])
    finally:
        pm.unregister(name="recall-kit-quoting-model")
    assert result.exit_code == 2 and "ValueError" in result.output, result.output
    question = _rows(dataset / "queries.jsonl")[0]["text"]
    memories = [row["content"] for row in _rows(dataset / "corpus.jsonl")[:4]]
    for text in [question, *memories]:
        assert text[:40] not in result.output
    assert "rejected request" not in result.output


def test_a_model_generator_without_a_model_names_the_flag_that_asked_for_it(llm_home, tmp_path):
    """Issue 72: `--paraphrase 3` alone said "No model named: pass --model NAME", naming no flag."""
    store = _store(tmp_path)
    result = invoke_cli(["dataset", "generate", str(store), "--paraphrase", "3"])
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert message.startswith("Error: --paraphrase 3: its generator 'llm-paraphrase' writes queries with a language "
                              "model") and "--model NAME" in message and "\n" not in message, message
    assert not (store / "queries.jsonl").exists()
