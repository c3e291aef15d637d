"""A study with a model judge: the pool labelled, the candidates scored on it, agreement measured
(the judgments and agreement steps, recall_kit.study.steps.judgments,
recall_kit.study.steps.agreement)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from study_support import LEXICAL_PAIR, plugins

from recall_kit import Memory, Query, RelevanceJudge, hookimpl
from recall_kit.study import run_study
from recall_kit.testing import registered_plugin

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"


class WordJudge(RelevanceJudge):
    """A real, simple judge: relevant (2) when the memory holds two of the query's longer words."""

    description = "shared words (tests)"

    def grade(self, query: Query, memory: Memory) -> int | None:
        words = {w for w in re.findall(r"\w+", query.text.lower()) if len(w) > 4}
        return 2 if len(words & set(re.findall(r"\w+", memory.content.lower()))) >= 2 else 0

    def provenance(self) -> dict[str, str]:
        return {"judge": "words"}


class JudgePlugin:
    @hookimpl
    def register_judges(self, register):  # type: ignore[no-untyped-def]
        register("words", WordJudge)


STUDY = f"""
[study]
name = "judged"
folder = "out"
hook_k = 5
baseline = "fts5"
resamples = 300

[store]
dataset = "{EXAMPLE.as_posix()}"

[judging]
pool_depth = 5
judge = "words"
{{agreement}}
""" + LEXICAL_PAIR


@pytest.fixture
def registered() -> Iterator[None]:
    with plugins("recall-kit-fts5", "recall-kit-bm25"), registered_plugin(JudgePlugin(), name="words-judge-test"):
        yield


def test_a_model_judge_labels_the_pool_and_agreement_is_measured(tmp_path: Path, registered: None) -> None:
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(agreement=""))
    study, _ = run_study(path)
    assert study.labels.source == "words" and study.labels.pooled_labels > 0
    # the top 5 is inside the pool: the model graded all of it, yet a model's grade is a prediction, not a
    # label: its pairs are still holes (the bounds, the holes threat)
    assert min(s.unjudged_share for s in study.systems) > 0
    keys = [t.key for t in study.threats]
    assert "holes" in keys and "unpooled-labels" not in keys
    assert "judge-agreement" in keys and not study.agreement.measured
    # A model judge never measured: every verdict provisional, and the bottom line says why.
    assert study.recommendation is not None and study.recommendation.provisional
    assert all(v.provisional for v in study.verdicts)
    markdown = (tmp_path / "out" / "study.md").read_text()
    assert "- Provisional recommendation: " in markdown and "agreement was never measured" in markdown
    # A person grades the model's pairs (here: agrees with it everywhere): kappa, and only what reads it reruns.
    grades = tmp_path / "out" / "steps" / "judgments" / "model-grades.jsonl"
    mine = tmp_path / "mine.jsonl"
    mine.write_text("".join(json.dumps({"query_id": row["query_id"], "relevance": row["relevance"]}) + "\n"
                            for row in map(json.loads, grades.read_text().splitlines())))
    path.write_text(STUDY.format(agreement='agreement = "mine.jsonl"'))
    study, build = run_study(path)
    assert build.computed == ["agreement", "document"]
    assert study.agreement.measured and study.agreement.kappa == 1.0
    assert "judge-agreement" not in [t.key for t in study.threats]
    assert study.recommendation is not None and "judge agreement" not in study.recommendation.provisional_why
    assert "never measured" not in study.recommendation.provisional_why  # what holds it back now: the holes alone
    # A person who disagrees (every grade flipped): kappa below 0.6, the verdict provisional again.
    mine.write_text("".join(json.dumps({"query_id": row["query_id"],
                                        "relevance": {d: 0 if g else 2 for d, g in row["relevance"].items()}}) + "\n"
                            for row in map(json.loads, grades.read_text().splitlines())))
    study, _ = run_study(path)
    assert study.agreement.measured and study.agreement.kappa is not None and study.agreement.kappa < 0.6
    assert study.recommendation is not None and study.recommendation.provisional
    assert "is below 0.6" in study.recommendation.provisional_why


def test_agreement_with_the_users_own_qrels_gives_a_kappa(tmp_path: Path) -> None:
    """`[judging] agreement` with judge = "qrels": a second person's grades against the user's qrels."""
    qrels = [json.loads(line) for line in (EXAMPLE / "qrels.jsonl").read_text().splitlines()]
    second = tmp_path / "second.jsonl"  # agrees on every pair the qrels grade
    second.write_text("".join(json.dumps({"query_id": row["query_id"], "relevance": row.get("relevance") or
                                          {str(d): 1 for d in row.get("relevant_ids", [])}}) + "\n" for row in qrels))
    path = tmp_path / "study.toml"
    path.write_text(STUDY.replace('judge = "words"', 'judge = "qrels"').format(agreement='agreement = "second.jsonl"'))
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        study, _ = run_study(path)
    assert study.labels.source == "qrels"
    assert study.agreement.measured and study.agreement.n and study.agreement.against == "the user's qrels"
    assert "judge-agreement" not in [t.key for t in study.threats]
    assert "recall-kit agreement ../second.jsonl steps/judgments/dataset/qrels.jsonl" in (tmp_path / "out" / "study.md").read_text()
