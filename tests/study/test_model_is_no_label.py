"""A model's grade is a prediction, never a label (issue 71): the label page offers the intervals'
sample whatever the judge, shows the model's grade only after the person's, and the person's grades
measure the judge; no grade of one assessor is lost across their files; a graded metric's interval
reads the grades with its own gain (recall_kit.study.people, recall_kit.label, recall_kit.decide.ppi)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import recall_kit
from study.test_people import IdJudge, JudgePlugin, write
from study_support import plugins

from recall_kit.study import run_study
from recall_kit.study.steps.intervals import sample_pairs


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[None]:
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        yield


def grades_file(path: Path, assessor: str, grades: list[tuple[str, str, int, str]]) -> None:
    """A grades file as `recall-kit label` writes it: one row a query, each grade with its time."""
    rows: dict[str, dict[str, dict[str, object]]] = {}
    for query, doc, grade, at in grades:
        row = rows.setdefault(query, {"relevance": {}, "judged_at": {}})
        row["relevance"][doc] = grade  # type: ignore[index]
        row["judged_at"][doc] = at  # type: ignore[index]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"query_id": q, **row, "assessor": assessor}) + "\n" for q, row in rows.items()),
                    encoding="utf-8")


def test_one_assessors_two_files_are_merged_the_most_recent_grade_winning(tmp_path: Path) -> None:
    from recall_kit.label.session import open_session
    from recall_kit.study.label_report import people_line

    path = write(tmp_path)
    run_study(path)
    labels = tmp_path / "out" / "labels"
    pairs = sample_pairs(tmp_path / "out")[:11]
    # the laptop's file: pairs 0-5; the desk's: pairs 5-10; pair 5 graded 1 on the laptop later than 0 on the desk
    grades_file(labels / "x-laptop.jsonl", "x", [(q, d, 1, "2030-01-02T00:00:00+00:00") for q, d in pairs[:6]])
    grades_file(labels / "x.jsonl", "x", [(q, d, 0, "2030-01-01T00:00:00+00:00") for q, d in pairs[5:]])
    study, _ = run_study(path)
    judgments = json.loads((tmp_path / "out" / "steps" / "judgments" / "judgments.json").read_text(encoding="utf-8"))
    assert judgments["people"]["added"] == 11 and judgments["people"]["conflicts"] == {"x": 1}
    assert study.people.assessors == {"x": 11} and study.people.conflicts == {"x": 1}
    assert "x: 1 pair graded differently in two of their files (the most recent grade kept)" in people_line(study)
    from recall_kit.curate.judge import read_qrels_file

    merged = read_qrels_file(tmp_path / "out" / "steps" / "judgments" / "dataset" / "qrels.jsonl")
    query, doc = pairs[5]
    assert merged[query][doc] == 1  # the laptop's, the more recent
    # the label page, writing x.jsonl, counts the laptop's grades as given: none of them is offered again
    session = open_session(path, "x")
    try:
        assert all(session.judged(q, d) for q, d in pairs) and not set(pairs) & set(session.queue())
    finally:
        session.close()


GRADED = """
decision_metrics = ["ndcg@5", "recall@5"]
"""


def test_a_graded_metrics_interval_is_its_delta_when_every_hole_is_labelled(tmp_path: Path) -> None:
    from recall_kit.curate.assessor import AssessorFile

    path = write(tmp_path, 'scale = "graded"')
    text = path.read_text(encoding="utf-8").replace('baseline = "fts5"', 'baseline = "fts5"' + GRADED)
    path.write_text(text, encoding="utf-8")
    run_study(path)
    for grade in (3, 2):
        out = AssessorFile.open(tmp_path / "out" / "labels" / "alice.jsonl", "alice")
        for query, doc in sample_pairs(tmp_path / "out"):  # every hole of every open query
            out.grade(query, doc, grade)
        study, _ = run_study(path)
        row = next(r for r in study.intervals.rows if r.scope == "overall" and r.metric == "ndcg@5")
        scored = next(r for r in study.head_to_head if r.scope == "overall" and r.metric == "ndcg@5")
        assert row.interval is not None and row.interval.method == "exact"
        assert row.interval.delta == pytest.approx(scored.delta, abs=1e-4)
        bounds = next(b for b in study.bounds if b.scope == "overall" and b.metric == "ndcg@5")
        assert not bounds.can_flip and bounds.low == pytest.approx(scored.delta, abs=1e-4)


def test_a_model_judges_grades_leave_the_sample_to_label_and_a_persons_grades_measure_it(
        tmp_path: Path, recall_kit_plugin) -> None:
    from recall_kit.curate.judge import read_qrels_file
    from recall_kit.label.session import open_session
    from recall_kit.label.view import state
    from recall_kit.study.document import bottom_line

    recall_kit_plugin(JudgePlugin(), name="parity-judge")
    path = write(tmp_path, 'judge = "parity"')
    first, _ = run_study(path)
    folder = tmp_path / "out"
    model = read_qrels_file(folder / "steps" / "judgments" / "model-grades.jsonl")
    pairs = sample_pairs(folder)
    assert pairs and all(d in model.get(q, {}) for q, d in pairs)  # the model graded every sample pair ...
    assert first.recommendation.provisional and "never measured" in first.recommendation.provisional_why
    assert any(s.unjudged_share > 0 for s in first.systems)  # ... and they are still holes
    session = open_session(path, "alice")
    try:
        from recall_kit.study.rules import verdict_subject

        # the page's verdicts, "why" lines and contrast view are about the system the bottom line states
        assert session.material.challenger == verdict_subject(first) == first.intervals.challenger
        assert session.current in set(pairs) and not any(session.judged(*p) for p in pairs)
        shown = state(session).to_json()
        assert shown["previous"] is None and "model_grade" not in json.dumps(shown)  # never before the person's
        assert shown["progress"]["sample_left"] == len(pairs)
        query, doc = session.current
        session.grade(query, doc, 1 - model[query][doc])
        after = state(session).to_json()["previous"]
        assert after == {"query_id": query, "doc_id": doc, "grade": 1 - model[query][doc],
                         "model_grade": model[query][doc]}
        assert state(session).progress.sample_left == len(pairs) - 1
    finally:
        session.close()
    # a person who agrees with the model on the sample: kappa 1, the judge no longer holds the verdict back
    IdJudge.asked = []
    from recall_kit.curate.assessor import AssessorFile

    out = AssessorFile.open(folder / "labels" / "alice.jsonl", "alice")
    for q, d in pairs:
        out.grade(q, d, model[q][d])
    agreed, _ = run_study(path)
    assert agreed.agreement.measured and agreed.agreement.kappa == 1.0 and agreed.agreement.n == len(pairs)
    assert "judge agreement" not in agreed.recommendation.provisional_why
    assert "never measured" not in " ".join(bottom_line(agreed))
    # one who disagrees on a third of them: kappa below min_kappa, the verdict provisional, saying so
    for index, (q, d) in enumerate(pairs):
        out.grade(q, d, model[q][d] if index % 3 else 1 - model[q][d])
    disagreed, _ = run_study(path)
    assert disagreed.agreement.kappa < 0.6 and disagreed.recommendation.provisional
    assert "is below 0.6 ([judging] min_kappa)" in bottom_line(disagreed)[0]
    document = (folder / "study.md").read_text(encoding="utf-8")
    assert f"**judge agreement**: kappa {disagreed.agreement.kappa:.3f} [" in document  # as the bottom line says it
    # one who grades every pair alike: kappa says nothing, said as undefined (not "None", not "below")
    for q, d in pairs:
        out.grade(q, d, 0)
    alike, _ = run_study(path)
    assert alike.agreement.measured and alike.agreement.kappa is None and alike.recommendation.provisional
    assert (f"judge agreement on {len(pairs)} pairs (the model judge 'parity''s grades, by alice) is undefined: "
            "one side graded every shared pair alike") in bottom_line(alike)[0]
    document = (folder / "study.md").read_text(encoding="utf-8")
    assert "None" not in document and "undefined is below" not in document
    assert f"**judge agreement**: kappa undefined on {len(pairs)} pairs" in document
    assert [t.title for t in alike.threats if t.key == "judge-agreement"] == ["Judge agreement undefined"]


class ChanceJudge(IdJudge):
    """The parity judge with a probability of relevance for each pair (0.875 odd ids, 0.125 even),
    as numpy scalars (a number all the same)."""

    def probabilities(self, pairs):
        import numpy as np

        return [np.float32(0.875 if int(memory.id) % 2 else 0.125) for _, memory in pairs]


class BrokenChanceJudge(IdJudge):
    def probabilities(self, pairs):
        return [1.5 for _ in pairs]


class WordyChanceJudge(IdJudge):
    def probabilities(self, pairs):
        return ["likely" for _ in pairs]


class ChancePlugin:
    @recall_kit.hookimpl
    def register_judges(self, register):
        register("chance", ChanceJudge)
        register("broken-chance", BrokenChanceJudge)
        register("wordy-chance", WordyChanceJudge)


def test_a_judges_probabilities_are_the_intervals_predictor_and_grades_stand_in_without_them(
        tmp_path: Path, recall_kit_plugin) -> None:
    """A judge with a probability of relevance (`RelevanceJudge.probabilities`: `combined`'s) has
    them written beside its grades, for every pair it graded, and the intervals take them as their
    predictor; a judge without them (the parity judge) is read by its grades; one whose
    probabilities are not numbers in [0, 1] fails the run in one line."""
    from recall_kit.curate.judge import read_qrels_file
    from recall_kit.errors import PluginRunError
    from recall_kit.study.steps.judgments import PROBABILITIES, read_probabilities

    recall_kit_plugin(JudgePlugin(), name="parity-judge")
    recall_kit_plugin(ChancePlugin(), name="chance-judge")
    path = write(tmp_path / "chance", 'judge = "chance"')
    run_study(path)
    steps = tmp_path / "chance" / "out" / "steps"
    grades = read_qrels_file(steps / "judgments" / "model-grades.jsonl")
    chances = read_probabilities(steps / "judgments" / PROBABILITIES)
    assert grades and {q: set(d) for q, d in chances.items()} == {q: set(d) for q, d in grades.items()}
    assert all(p == (0.875 if int(d) % 2 else 0.125) for docs in chances.values() for d, p in docs.items())
    intervals = json.loads((steps / "intervals" / "intervals.json").read_text(encoding="utf-8"))
    assert intervals["predictor"] == "the chance judge's probabilities"
    parity = write(tmp_path / "parity", 'judge = "parity"')
    run_study(parity)
    steps = tmp_path / "parity" / "out" / "steps"
    assert not (steps / "judgments" / PROBABILITIES).exists()
    assert json.loads((steps / "intervals" / "intervals.json").read_text(encoding="utf-8"))["predictor"] == \
        "the parity judge"
    for name in ("broken-chance", "wordy-chance"):
        broken = write(tmp_path / name, f'judge = "{name}"')
        with pytest.raises(PluginRunError, match=r"not a number in \[0, 1\]") as refused:
            run_study(broken)
        assert len(str(refused.value).splitlines()) == 1


@pytest.mark.parametrize("given", [["0.5", "0.5"], [True, False], [0.5, "0.5"]], ids=["strings", "bools", "one string"])
def test_probabilities_that_float_reads_but_are_not_numbers_are_refused(tmp_path: Path, given: list[object]) -> None:
    """A judge's probability is a real number (a numpy scalar is one): "0.5" or True, which float()
    would read as 0.5 and 1.0, are refused in one line and nothing is written."""
    import numpy as np

    from recall_kit.errors import PluginRunError
    from recall_kit.study.steps.judgments import read_probabilities, write_probabilities

    class Giving(IdJudge):
        def probabilities(self, pairs):
            return list(values)

    evaluation = Path(__file__).resolve().parents[2] / "examples" / "memories"
    graded = {"exact_001": {"275": 2}, "exact_002": {"75": 0}}
    out = tmp_path / "probabilities.jsonl"
    values: list[object] = given
    with pytest.raises(PluginRunError, match=r"not a number in \[0, 1\]") as refused:
        write_probabilities(Giving(), graded, evaluation, out)
    assert len(str(refused.value).splitlines()) == 1 and not out.exists()
    values = [np.float32(0.25), np.float64(0.75)]  # numbers, whatever their type
    write_probabilities(Giving(), graded, evaluation, out)
    assert read_probabilities(out) == {"exact_001": {"275": 0.25}, "exact_002": {"75": 0.75}}
