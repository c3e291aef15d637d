"""The study with people's labels: bounds for every decision row and `can flip`/`cannot flip` for
every verdict; assessors' files merged, their kappa, a rerun that runs no system again; a model
judge on a stratified sample of the ordered pairs (recall_kit.study.people, recall_kit.study.steps.bounds,
recall_kit.study.label_report, recall_kit.study.steps.judgments)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from study_support import plugins

import recall_kit
from recall_kit import RelevanceJudge
from recall_kit.curate.assessor import AssessorFile
from recall_kit.errors import SpecError
from recall_kit.study import run_study
from recall_kit.study.people import merge_labels, people_grades

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"
STUDY = """
[study]
name = "labels"
folder = "out"
hook_k = 5
baseline = "fts5"
resamples = 200

[store]
dataset = "{store}"

[judging]
{judging}

[[systems]]
name = "fts5"
retriever = "fts5"

[[systems]]
name = "bm25"
retriever = "bm25"

[cost]
latency_sample = 2
"""


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[None]:
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        yield


def write(folder: Path, judging: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "study.toml"
    path.write_text(STUDY.format(store=EXAMPLE.as_posix(), judging=judging), encoding="utf-8")
    return path


def test_people_grades_take_the_most_common_grade_and_the_lower_on_a_tie() -> None:
    people = {"a": {"q": {"1": 2, "2": 1}}, "b": {"q": {"1": 2, "2": 0}}, "c": {"q": {"1": 1}}}
    assert people_grades(people) == {"q": {"1": 2, "2": 0}}


def test_the_users_labels_win_then_each_layer_in_turn() -> None:
    rows = [{"query_id": "q", "relevant_ids": ["1"]}]
    merged, added = merge_labels(rows, {"q": {"1": 0, "2": 1}}, {"q": {"2": 0, "3": 2}})
    assert merged == [{"query_id": "q", "relevance": {"1": 1, "2": 1, "3": 2}}]
    assert added == [1, 1]


def test_every_verdict_says_whether_it_can_flip_and_labels_rerun_only_what_they_change(tmp_path: Path) -> None:
    path = write(tmp_path)
    first, _ = run_study(path)
    scopes = {v.scope for v in first.verdicts}
    assert {(b.scope, b.metric) for b in first.bounds if b.candidate == "bm25"} == \
        {(scope, metric) for scope in scopes for metric in ("recall@5", "mrr@5")}
    for bound in first.bounds:
        assert bound.low <= bound.delta <= bound.high and bound.low <= bound.all_relevant <= bound.high
    for verdict in first.verdicts:
        rows = [b for b in first.bounds if b.scope == verdict.scope and b.candidate == verdict.system]
        assert verdict.bounds.can_flip == any(b.can_flip for b in rows)
        assert verdict.bounds.delta_if_none_relevant == rows[0].delta
    for pair in first.recommendation.comparisons:  # compare down: bm25 against fts5, read the other way round
        assert pair.bounds is not None and pair.bounds.delta_if_none_relevant == pytest.approx(pair.rows[0].delta, abs=1e-6)
    markdown = (tmp_path / "out" / "study.md").read_text(encoding="utf-8")
    assert "What the unjudged pairs can do to each verdict" in markdown
    holes = next(t for t in first.threats if t.key == "holes")
    lines = [line for line in holes.evidence if "flip" in line]
    assert len(lines) == len(first.verdicts)
    assert all(line.split(":")[1].strip().startswith(("can flip", "cannot flip")) for line in lines)

    # two assessors grade the challenger's unjudged top hits of ten queries (overlapping on five)
    from recall_kit import load_dataset, load_result

    rankings = load_result(tmp_path / "out" / "steps" / "eval" / "bm25" / "result.json").rankings()
    judged = load_dataset(tmp_path / "out" / "steps" / "judgments" / "dataset").qrels
    pairs = [(q, d) for q in sorted(rankings)[:10] for d in rankings[q][:5] if d not in judged.get(q, {})]
    alice = AssessorFile.open(tmp_path / "out" / "labels" / "alice.jsonl", "alice")
    bob = AssessorFile.open(tmp_path / "out" / "labels" / "bob.jsonl", "bob")
    for i, (query, doc) in enumerate(pairs):
        alice.grade(query, doc, int(i % 4 == 0 or i % 3 == 0))
        if i % 2 == 0:
            bob.grade(query, doc, 0 if i % 4 else 1)
    second, build = run_study(path)
    assert {"judgments", "eval/fts5", "eval/bm25", "bounds", "document"} <= set(build.computed)
    assert not [step for step in build.computed if step.startswith("run/")]
    assert second.labels.pooled_labels == len(pairs)
    people = second.people
    assert people.assessors == {"alice": len(pairs), "bob": len(pairs[::2])} and people.added == len(pairs)
    assert people.between[0].n == len(pairs[::2])
    assert second.agreement.measured and second.agreement.n == len(pairs[::2])
    markdown = (tmp_path / "out" / "study.md").read_text(encoding="utf-8")
    assert f"**people**: alice {len(pairs)} grades, bob {len(pairs[::2])} grades" in markdown
    assert "kappa alice / bob" in markdown
    assert sum(b.holes for b in second.bounds) < sum(b.holes for b in first.bounds)
    third, build = run_study(path)
    assert build.computed == []


def test_people_naming_a_missing_file_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, 'people = ["nobody.jsonl"]')
    with pytest.raises(SpecError, match=r"\[judging\] people names .*nobody.jsonl, which is not a file"):
        run_study(path)


class IdJudge(RelevanceJudge):
    """A judge that grades by the memory id's parity: a real RelevanceJudge, counted."""

    asked: list[tuple[str, str]] = []

    @dataclass(frozen=True)
    class Options:
        model: str = ""

    def grade(self, query, memory):
        type(self).asked.append((query.query_id, memory.id))
        return int(memory.id) % 2


class JudgePlugin:
    @recall_kit.hookimpl
    def register_judges(self, register):
        register("parity", IdJudge)


def test_a_model_judge_grades_a_sample_of_the_ordered_pairs(tmp_path: Path, recall_kit_plugin) -> None:
    recall_kit_plugin(JudgePlugin(), name="parity-judge")
    IdJudge.asked = []
    path = write(tmp_path, 'judge = "parity"\nsample = 30')
    result, _ = run_study(path)
    assert len(IdJudge.asked) == 30
    sample = json.loads((tmp_path / "out" / "steps" / "judgments" / "sample.json").read_text())
    assert sample["sample"] == sample["judged"] == 30 and sample["seconds_left"] == 0
    assert result.labels.pooled_labels == 30
    # a person grades five of the pairs the model graded: kappa against the model judge
    from recall_kit.curate.judge import read_qrels_file

    model = read_qrels_file(tmp_path / "out" / "steps" / "judgments" / "model-grades.jsonl")
    graded = [(q, d, g) for q, docs in sorted(model.items()) for d, g in sorted(docs.items())][:5]
    alice = AssessorFile.open(tmp_path / "out" / "labels" / "alice.jsonl", "alice")
    for query, doc, grade in graded:
        alice.grade(query, doc, grade if query != graded[0][0] else 1 - grade)
    IdJudge.asked = []
    again, build = run_study(path)
    assert "agreement" in build.computed and not [s for s in build.computed if s.startswith("run/")]
    against = again.people.against_model
    assert [(row.assessor, row.n) for row in against] == [("alice", 5)]
    assert again.agreement.measured and again.agreement.kappa == against[0].kappa


def test_each_assessor_is_measured_against_the_users_qrels_on_binary_relevance() -> None:
    from recall_kit.study.people import people_agreement

    qrels = {"q": {"1": 2, "2": 0, "3": 1, "4": 0}}
    people = {"alice": {"q": {"1": 1, "2": 0, "3": 1, "4": 0, "9": 1}}, "bob": {"q": {"1": 1, "2": 1, "3": 0}}}
    found = people_agreement(people, None, qrels=qrels)
    by = {row["assessor"]: row for row in found["against_qrels"]}
    assert by["alice"]["kappa"] == 1.0 and by["alice"]["n"] == 4  # a qrels grade of 2 is relevant, as 1 is
    assert by["bob"]["n"] == 3 and by["bob"]["kappa"] < 0
    assert found["between"][0]["n"] == 3 and people_agreement(people, None)["against_qrels"] == []


def test_a_pair_graded_twice_and_grades_of_unknown_queries_are_counted_and_said(tmp_path: Path, capsys) -> None:
    """Issue 72: a pair graded 1 then 0 in one file used the last grade and said nothing; grades of a
    query not in the study were ignored silently (while an unknown memory id is refused)."""
    from recall_kit.curate.assessor import AssessorFile
    from recall_kit.study.steps.judgments import screen_people

    evaluation = tmp_path / "evaluation-set"
    evaluation.mkdir()
    (evaluation / "corpus.jsonl").write_text('{"id": "a", "content": "x"}\n{"id": "b", "content": "y"}\n')
    (evaluation / "queries.jsonl").write_text('{"query_id": "q1", "text": "t"}\n')
    labels = tmp_path / "ann.jsonl"
    rows = [{"query_id": "q1", "relevance": {"a": 1}, "assessor": "ann"},
            {"query_id": "q1", "relevance": {"a": 0, "b": 1}, "assessor": "ann"},
            {"query_id": "gone", "relevance": {"a": 1, "b": 0}, "assessor": "ann"}]
    labels.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert AssessorFile.open(labels, "ann").regraded == 1
    people, _, _ = screen_people([labels], evaluation)
    assert people["ann"]["q1"] == {"a": 0, "b": 1}  # the rule stays: the later grade wins
    said = capsys.readouterr().err.strip().splitlines()
    assert said == ["study: ann.jsonl: 1 pair(s) graded twice (in two rows of the file: the later row's grade is "
                    "used); 2 grade(s) of queries not in the study (left out)."]
