"""The `embedding` and `combined` judges: the real bundled MiniLM's similarity against a
threshold; the combined judge's cross-fitting (no labelled pair graded by a model that saw it)."""

from __future__ import annotations

import numpy as np
import pytest
import recall_kit_dense
from recall_kit_dense.judges import CombinedJudge, EmbeddingJudge, grade_of, kappas_at

from recall_kit.plugin import JudgingContext, Memory, OptionError, PairEvidence, Query
from recall_kit.testing import registered_plugin, registries


def test_registered_as_embedding_and_combined() -> None:
    with registered_plugin(recall_kit_dense):
        judges = registries()["judges"]
        assert judges.get("embedding").obj is EmbeddingJudge and judges.get("combined").obj is CombinedJudge


def test_grade_of_splits_at_the_threshold() -> None:
    assert [grade_of(value, 0.4) for value in (0.1, 0.4, 0.69, 0.7, 1.0)] == [0, 2, 2, 3, 3]


def test_embedding_judge_calls_the_similar_memory_relevant() -> None:
    judge = EmbeddingJudge()
    judge.prepare()
    query = Query("q", "where does the cat sleep?", answer="on the windowsill")
    near = Memory("1", "The cat sleeps on the warm windowsill every afternoon.")
    far = Memory("2", "Quarterly revenue grew eight percent, driven by subscription sales.")
    assert list(judge.grade_many([(query, near), (query, far)])) == [2, 0]  # relevant, not
    by_answer = EmbeddingJudge(EmbeddingJudge.Options(against="answer"))
    assert by_answer.threshold == 0.3
    assert list(by_answer.grade_many([(query, far), (Query("r", "no answer"), near)])) == [0, None]
    with pytest.raises(OptionError, match="embedding.against"):
        EmbeddingJudge(EmbeddingJudge.Options(against="memory")).prepare()


def _context(queries: int) -> tuple[JudgingContext, list[tuple[Query, Memory]]]:
    """Each query's answer "teal <i>"; its memory p<i> holds it, n<i> does not. The systems rank n<i> first."""
    qs = {f"q{i}": Query(f"q{i}", f"which colour is number {i}", answer=f"teal {i}") for i in range(queries)}
    corpus = {f"p{i}": Memory(f"p{i}", f"it was teal {i}, I think") for i in range(queries)}
    corpus.update({f"n{i}": Memory(f"n{i}", f"a long walk by the river {i}") for i in range(queries)})
    labels = {f"q{i}": {f"p{i}": 1, f"n{i}": 0} for i in range(queries)}
    evidence = {(f"q{i}", f"n{i}"): PairEvidence({"bm25": 1}, {"bm25": 2.0}, {"bm25": 1}) for i in range(queries)}
    evidence.update({(f"q{i}", f"p{i}"): PairEvidence({"bm25": 2}, {"bm25": 1.0}, {"bm25": 2}) for i in range(queries)})
    context = JudgingContext(labels=labels, queries=qs, corpus=corpus, evidence=evidence, systems=("bm25",),
                             legs=("bm25",), seed=3)
    pairs = [(qs[f"q{i}"], corpus[f"{kind}{i}"]) for i in range(queries) for kind in "pn"]
    return context, pairs


def test_combined_judge_is_cross_fitted_over_queries() -> None:
    context, pairs = _context(10)
    judge = CombinedJudge(CombinedJudge.Options(signals="answer,question,ranks", folds=5))
    judge.prepare()
    judge.fit(context)
    folds = judge._fold_of
    assert sorted(folds) == sorted(context.queries) and sorted(set(folds.values())) == [0, 1, 2, 3, 4]
    for k in range(5):
        held_out = sum(2 for fold in folds.values() if fold == k)
        # Each fold's model saw every labelled pair but its own fold's (2 pairs a query).
        assert judge._fitted[k].model[0].n_samples_seen_ == 20 - held_out
    assert judge._fitted[-1].model[0].n_samples_seen_ == 20
    assert list(judge.grade_many(pairs)) == [3 if memory.id.startswith("p") else 0 for _, memory in pairs]
    # A labelled pair is graded by its query's fold model; an unlabelled query's by the model of all.
    rows = judge.features(pairs[:1])
    fold_model = judge._fitted[folds["q0"]]
    expected = grade_of(float(fold_model.model.predict_proba(rows)[0, 1]), fold_model.threshold)
    assert next(judge.grade_many(pairs[:1])) == expected
    assert judge.provenance()["judge_signals"] == "answer,question,ranks"


def test_combined_judge_gives_the_probability_each_grade_came_from() -> None:
    """The probabilities a study's intervals take as their predictor: each pair's from the model its
    grade came from (a grade >= 1 exactly where it reaches that model's threshold), on the grid,
    remembered from grading and computed for a pair not graded; forgotten at the next fit."""
    from recall_kit.plugin import on_grid

    context, pairs = _context(10)
    judge = CombinedJudge(CombinedJudge.Options(signals="answer,question,ranks", folds=5))
    judge.prepare()
    judge.fit(context)
    graded = list(judge.grade_many(pairs[:6]))
    values = judge.probabilities(pairs)
    assert len(values) == len(pairs) and all(0 <= v <= 1 and v == on_grid(v) for v in values)
    for (query, memory), grade, value in zip(pairs, graded, values, strict=False):
        fitted = judge._fitted[judge._fold_of[query.query_id]]
        assert value == on_grid(float(fitted.model.predict_proba(judge.features([(query, memory)]))[0, 1]))
        assert (grade >= 1) == (value >= fitted.threshold)
    assert [v > 0.5 for v in values] == [memory.id.startswith("p") for _, memory in pairs]
    unlabelled = (Query("new", "which colour is number 3", answer="teal 3"), context.corpus["p3"])
    (value,) = judge.probabilities([unlabelled])
    assert value == on_grid(float(judge._fitted[-1].model.predict_proba(judge.features([unlabelled]))[0, 1]))
    judge.fit(context)
    assert judge._probability == {}


def test_a_judge_without_a_model_gives_no_probabilities() -> None:
    assert EmbeddingJudge().probabilities([]) is None


def test_combined_judge_refusals() -> None:
    context, _ = _context(3)
    one_kind = JudgingContext(labels={"q0": {"p0": 1}, "q1": {"p1": 1}}, queries=context.queries,
                              corpus=context.corpus)
    judge = CombinedJudge(CombinedJudge.Options(signals="answer"))
    with pytest.raises(OptionError, match="both kinds"):
        judge.fit(one_kind)
    with pytest.raises(OptionError, match="unknown colour"):
        CombinedJudge(CombinedJudge.Options(signals="answer,colour")).prepare()
    with pytest.raises(OptionError, match="only after it was fitted"):
        next(CombinedJudge(CombinedJudge.Options(signals="answer")).grade_many(_context(1)[1]))


@pytest.mark.parametrize("seed", range(5))
def test_threshold_kappas_agree_with_sklearn(seed: int) -> None:
    # the combined judge's threshold search (one sort) against sklearn's cohen_kappa_score at each
    # threshold, with ties and thresholds below, at and above every probability
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, 400)
    probabilities = np.round(rng.random(400), 2)
    thresholds = np.unique(np.concatenate([probabilities, [0.0, 0.005, 1.0, 1.5]]))
    ours = kappas_at(truth, probabilities, thresholds)
    theirs = [cohen_kappa_score(truth, (probabilities >= t).astype(int)) if 0 < (probabilities >= t).sum() < 400
              else 0.0 for t in thresholds]
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_the_neighbours_signal_reads_the_turns_beside_a_memory_in_its_session_alone() -> None:
    """A chat's reply does not repeat the question's words; the turn before it does. The memory's
    neighbours are the turns just before and after it in its session (never across sessions nor
    scopes), and a store without sessions or parents gives the columns as zeros."""
    turns = [("a1", "a", 1, "Mel: What have you been researching lately, Caroline?"),
             ("a2", "a", 1, "Caroline: Adoption agencies, mostly."),
             ("a3", "a", 1, "Mel: That sounds wonderful."),
             ("a4", "a", 2, "Caroline: I painted a lake at sunrise."),
             ("b1", "b", 1, "Jon: Researching what Caroline has been researching is odd.")]
    corpus = {doc: Memory(doc, text, scope=scope, extra={"session": session}) for doc, scope, session, text in turns}
    query = Query("q", "What has Caroline been researching?")
    context = JudgingContext(labels={}, queries={"q": query}, corpus=corpus)
    judge = CombinedJudge(CombinedJudge.Options(signals="neighbours"))
    judge._context = context
    assert judge._neighbours(context) == {"a1": ["a2"], "a2": ["a1", "a3"], "a3": ["a2"], "a4": [], "b1": []}
    best, whole, stemmed = judge._neighbour_columns([(query, corpus["a2"]), (query, corpus["a3"]),
                                                     (query, corpus["a4"]), (query, corpus["b1"])], context)
    assert best[0] > best[1] > 0 and best[2] == best[3] == 0  # a2 sits beside the question turn; a4, b1 alone
    assert whole[0] == 1.0 and whole[2] == whole[3] == 0  # every question word in a1 + a2 + a3
    assert stemmed[0] == 1.0
    loose = {doc: Memory(doc, memory.content) for doc, memory in corpus.items()}
    plain = JudgingContext(labels={}, queries={"q": query}, corpus=loose)
    fresh = CombinedJudge(CombinedJudge.Options(signals="neighbours"))
    assert all(not column.any() for column in fresh._neighbour_columns([(query, loose["a2"])], plain))
