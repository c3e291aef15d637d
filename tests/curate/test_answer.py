"""The `answer` judge: DPR's has-answer rule on the share of the answer's content words a memory
holds; registered as a built-in; a pool whose queries carry no answer is one clear error."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from recall_kit.cli import app
from recall_kit.curate.answer import AnswerJudge, answer_overlap
from recall_kit.types import Memory, Query

runner = CliRunner()


def test_overlap_counts_the_answers_content_words():
    # "Psychology, counseling certification": three content words; the memory holds two of them.
    assert answer_overlap("Psychology, counseling certification", "I want a counseling certification") == \
        pytest.approx(2 / 3)
    assert answer_overlap("the beach", "We went to the BEACH.") == 1.0  # "the" is a stopword
    assert answer_overlap("2022", "I painted it in 2022!") == 1.0
    assert answer_overlap("it", "it was") == 1.0  # only stopwords: its plain words count
    assert answer_overlap(None, "anything") is None and answer_overlap("", "anything") is None


def test_grades_follow_the_share():
    judge = AnswerJudge()
    query = Query("q", "what did she study?", answer="psychology counseling")
    assert judge.grade(query, Memory("1", "psychology and counseling")) == 3
    assert judge.grade(query, Memory("2", "counseling, mostly")) == 2  # half: relevant at min_share 0.5
    assert judge.grade(query, Memory("3", "painting")) == 0
    assert AnswerJudge(AnswerJudge.Options(min_share=1.0)).grade(query, Memory("2", "counseling, mostly")) == 0
    assert judge.grade(Query("q", "no answer here"), Memory("1", "psychology")) is None


def test_the_cli_judges_a_pool_without_a_model_and_refuses_answerless_queries(tmp_path):
    from recall_kit.testing import write_sample_dataset

    dataset = write_sample_dataset(tmp_path / "sample")
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"query_id": "exact_keys", "doc_ids": ["1", "2"]}) + "\n")
    out = tmp_path / "grades.jsonl"
    refused = runner.invoke(app, ["judge", str(pool), "-d", str(dataset), "--judge", "answer", "--out", str(out)])
    assert refused.exit_code == 2 and 'needs queries with an "answer" field' in refused.output
    assert not out.exists()
    rows = [json.loads(line) for line in (dataset / "queries.jsonl").read_text().splitlines()]
    for row in rows:
        row["answer"] = "Driftwood API keys"
    (dataset / "queries.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = runner.invoke(app, ["judge", str(pool), "-d", str(dataset), "--judge", "answer", "--out", str(out)])
    assert done.exit_code == 0, done.output
    graded = json.loads(out.read_text().splitlines()[0])
    assert set(graded["relevance"]) == {"1", "2"} and graded["_judge"] == "answer"
