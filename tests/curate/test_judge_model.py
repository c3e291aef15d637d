"""`recall-kit judge --model`: a judge registered through `register_judges` grades the pool; the
host keeps the journal, resumes, writes the judge's grades only (with its provenance), counts the
pairs without a usable answer, and writes nothing when the judge's `prepare` refuses."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

import recall_kit
from recall_kit import RecallKitError, RelevanceJudge
from recall_kit.cli import app
from recall_kit.testing import write_sample_dataset

runner = CliRunner()
POOL = [{"query_id": "exact_keys", "doc_ids": ["5", "4", "9"]}, {"query_id": "multi_deploy", "doc_ids": ["6", "12"]}]


class LengthJudge(RelevanceJudge):
    """Grade: the memory's id modulo 4; memory 9 gets no usable answer."""

    description = "grades by id (a test judge)"
    asked: list[tuple[str, str]] = []

    @dataclass(frozen=True)
    class Options:
        model: str = ""
        allow_remote: bool = False

    def prepare(self) -> None:
        if self.options.model == "refused":
            raise RecallKitError("Model 'refused' is remote: pass --allow-remote.")

    def grade(self, query, memory):
        type(self).asked.append((query.query_id, memory.id))
        return None if memory.id == "9" else int(memory.id) % 4

    def provenance(self):
        return {"judge_model": self.options.model, "judge_prompt_version": "t-1"}


class Plugin:
    @recall_kit.hookimpl
    def register_judges(self, register):
        register("length", LengthJudge)


@pytest.fixture
def pool_and_data(tmp_path: Path, recall_kit_plugin):
    recall_kit_plugin(Plugin(), name="length-judge")
    LengthJudge.asked = []
    dataset = write_sample_dataset(tmp_path / "sample")
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps(row) + "\n" for row in POOL))
    return pool, dataset


def test_model_judge_grades_resumes_and_counts(pool_and_data, tmp_path):
    pool, dataset = pool_and_data
    out = tmp_path / "model.jsonl"
    args = ["judge", str(pool), "-d", str(dataset), "--out", str(out), "--model", "m1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # The dataset's own qrels (exact_keys: {4: 1}) are not copied: only the judge's grades.
    assert rows == [
        {"query_id": "exact_keys", "relevance": {"5": 1, "4": 0}, "_judge_model": "m1", "_judge_prompt_version": "t-1"},
        {"query_id": "multi_deploy", "relevance": {"6": 2, "12": 0}, "_judge_model": "m1", "_judge_prompt_version": "t-1"},
    ]
    assert "1 without a usable answer" in result.output
    assert len(LengthJudge.asked) == 5
    written = out.read_bytes()
    again = runner.invoke(app, args)
    # Only the pair still unjudged is asked again; it gets no usable answer: a failure, the file as it was.
    assert LengthJudge.asked[5:] == [("exact_keys", "9")]
    assert "4 of 5 pairs already judged" in again.output
    assert again.exit_code == 2 and "no usable answer for any of the 1 pairs" in again.output
    assert out.read_bytes() == written


def test_a_judge_with_no_usable_answer_writes_nothing(pool_and_data, tmp_path):
    """Before: exit 0, "Saved 0 new grades", and an empty qrels file written."""
    pool, dataset = pool_and_data
    pool.write_text(json.dumps({"query_id": "exact_keys", "doc_ids": ["9"]}) + "\n")
    out = tmp_path / "none.jsonl"
    result = runner.invoke(app, ["judge", str(pool), "-d", str(dataset), "--out", str(out), "--model", "m1"])
    assert result.exit_code == 2, result.output
    assert "no usable answer for any of the 1 pairs" in result.output
    assert not out.exists() and not Path(str(out) + ".journal").exists()


def test_refused_model_leaves_no_file_and_flags_are_checked(pool_and_data, tmp_path):
    pool, dataset = pool_and_data
    out = tmp_path / "q.jsonl"
    result = runner.invoke(app, ["judge", str(pool), "-d", str(dataset), "--out", str(out), "--model", "refused"])
    assert result.exit_code == 2 and "--allow-remote" in result.output
    assert not out.exists() and not Path(str(out) + ".journal").exists()
    result = runner.invoke(app, ["judge", str(pool), "-d", str(dataset), "--out", str(out), "--judge", "nope"])
    assert result.exit_code == 2 and "Unknown judge 'nope'" in result.output
    listing = runner.invoke(app, ["list", "judges"])
    assert "length" in listing.output
