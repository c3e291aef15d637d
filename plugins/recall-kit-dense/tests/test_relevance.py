"""The combined judge's `relevance` signal: MaxSim under the real bundled MiniLM's token vectors,
what a question asks for, a pair's standing among its query's candidates (worked out by hand), and
the judge grading a store without answers through it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from recall_kit_dense.judges import DEFAULT_SIGNALS, CombinedJudge
from recall_kit_dense.models import DEFAULT_MODEL
from recall_kit_dense.relevance import ASKED_FOR, TokenMatch, asked_for, standing

from recall_kit.plugin import JudgingContext, Memory, PairEvidence, Query


def test_token_match_prefers_the_memory_that_answers() -> None:
    match = TokenMatch(DEFAULT_MODEL, "cpu")
    question = "where does the cat sleep?"
    found = match.of([(question, "The cat sleeps on the warm windowsill every afternoon."),
                      (question, "Quarterly revenue grew eight percent, driven by subscription sales."),
                      (question, question)])
    assert found.shape == (3, 2)
    assert found[0, 0] > found[1, 0] and found[0, 1] > found[1, 1]
    assert np.allclose(found[2], 1.0, atol=1e-5)  # every token finds itself


def test_token_vectors_on_onnx_runtime_are_torchs_and_import_no_torch() -> None:
    """The judge reads token vectors on ONNX Runtime (no torch imported once the model is
    exported): the same tokens as sentence-transformers' `output_value=None`, the same vectors to
    float32's last bits, also for a text cut at the model's window and an empty one."""
    import subprocess
    import sys

    from recall_kit_dense import models

    texts = ["Where does the cat sleep?", "The cat sleeps on the warm windowsill.", "word " * 400, "",
             "Caroline: I went to the LGBTQ support group yesterday — it was so powerful!"]
    onnx, torch_path = TokenMatch(DEFAULT_MODEL, "cpu"), TokenMatch(DEFAULT_MODEL, "cpu")
    assert onnx._loaded().backend == "onnx"
    torch_path._loaded = lambda: models.load_model(models.resolve_model(DEFAULT_MODEL), "cpu")  # type: ignore[method-assign]
    onnx._encode(texts)
    torch_path._encode(texts)
    for text in texts:
        (ours, tokens), (theirs, expected) = onnx._tokens[text], torch_path._tokens[text]
        assert tokens == expected, text
        assert ours.shape == theirs.shape and np.allclose(ours, theirs, atol=1e-5), text
    assert len(onnx._tokens["word " * 400][1]) == 254  # 256 positions, [CLS] and [SEP] dropped
    script = ("import sys; from recall_kit_dense.relevance import TokenMatch; "
              f"TokenMatch({DEFAULT_MODEL!r}, 'cpu').of([('a question', 'a memory')]); "
              "print('torch' in sys.modules)")
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert found.stdout.strip() == "False", found.stderr[-2000:]


def test_asked_for_by_hand() -> None:
    assert len(ASKED_FOR) == 6
    got = asked_for("When did Caroline go to the support group?", "Caroline: I went to the group yesterday.")
    assert got == [1.0, 1.0, 1.0, 0.0, math.log1p(7), 1.0]
    got = asked_for("How many kids does Mel have?", "Melanie: we have three kids")
    assert got == [0.0, 0.0, 0.0, 1.0, math.log1p(5), 0.0]


def test_standing_by_hand_and_independent_of_the_batch() -> None:
    value = {"a": 3.0, "b": 1.0, "c": 2.0, "x": 0.0}

    def values(ids: list[tuple[str, str]]) -> np.ndarray:
        return np.array([[value[doc]] for _, doc in ids])

    candidates = {"q": ["a", "b", "c"]}
    rows = standing(values, [("q", "b"), ("q", "a")], candidates)
    spread = float(np.std([3.0, 1.0, 2.0]))
    assert np.allclose(rows[0], [1.0 - 3.0, (1.0 - 2.0) / spread, 1 / 3])  # b: two candidates above it
    assert np.allclose(rows[1], [0.0, (3.0 - 2.0) / spread, 1.0])
    assert np.allclose(standing(values, [("q", "b")], candidates), rows[:1])  # alone, the same row
    # a memory no system ranked stands among the candidates and itself
    outside = standing(values, [("q", "x")], candidates)[0]
    assert np.allclose(outside, [-3.0, (0.0 - 1.5) / float(np.std([3.0, 1.0, 2.0, 0.0])), 1 / 4])


def _store_without_answers(queries: int) -> tuple[JudgingContext, list[tuple[Query, Memory]]]:
    """Each query asks when someone painted a fence, with no answer; p<i> says when, n<i> does not.
    The systems rank n<i> first, so neither the ranks nor an answer tell them apart."""
    names = ["Ann", "Bob", "Cem", "Dan", "Eva", "Fay", "Gus", "Hal", "Ida", "Jon", "Kim", "Lou", "Max", "Ned", "Olga",
             "Pia", "Quin", "Rui", "Sam", "Tom"]
    qs = {f"q{i}": Query(f"q{i}", f"When did {names[i]} paint the garden fence?") for i in range(queries)}
    corpus = {f"p{i}": Memory(f"p{i}", f"{names[i]}: I painted the garden fence last Saturday.") for i in range(queries)}
    corpus.update({f"n{i}": Memory(f"n{i}", f"{names[(i + 1) % queries]}: the river walk was long and quiet")
                   for i in range(queries)})
    labels = {f"q{i}": {f"p{i}": 1, f"n{i}": 0} for i in range(queries)}
    evidence = {(f"q{i}", f"n{i}"): PairEvidence({"bm25": 1}, {"bm25": 2.0}, {"bm25": 1}) for i in range(queries)}
    evidence.update({(f"q{i}", f"p{i}"): PairEvidence({"bm25": 2}, {"bm25": 1.0}, {"bm25": 2}) for i in range(queries)})
    context = JudgingContext(labels=labels, queries=qs, corpus=corpus, evidence=evidence, systems=("bm25",),
                             legs=("bm25",), seed=1)
    return context, [(qs[f"q{i}"], corpus[f"{kind}{i}"]) for i in range(queries) for kind in "pn"]


def test_combined_judge_reads_a_store_without_answers() -> None:
    assert "relevance" in DEFAULT_SIGNALS
    context, pairs = _store_without_answers(20)
    judge = CombinedJudge()
    judge.prepare()
    judge.fit(context)
    grades = list(judge.grade_many(pairs))
    # cross-fitted: each by another fold's model, fitted to convergence (recall_kit.plugin.fit_logistic);
    # one pair of the 40 may sit at its fold's threshold
    agree = sum((grade >= 1) == truth for grade, truth in zip(grades, [True, False] * 20, strict=True))
    assert agree >= 39, grades
    rows = judge.features(pairs)
    assert rows.shape[1] == judge.features(pairs[:1]).shape[1]
    assert np.allclose(judge.features(pairs[:1]), rows[:1])  # a pair's signals do not depend on its batch


def test_the_combined_judge_runs_the_model_once_per_text_for_both_readings() -> None:
    """Its similarity and its token match read the same texts: one forward pass gives both (before:
    two, 1.6 s of the example study's 13 s). The embeddings of that pass are `encode`'s, bit for bit."""
    from recall_kit_dense import onnx_backend
    from recall_kit_dense.relevance import reading_model

    loaded = reading_model(DEFAULT_MODEL, "cpu")
    if loaded.backend != "onnx":
        pytest.skip("ONNX Runtime is not installed: the judge reads on torch, twice")
    texts = ["Where does the cat sleep?", "The cat sleeps on the warm windowsill.", "word " * 400, "", "Ann: hi"]
    embeddings, tokens = loaded.model.read(texts, 64)
    assert embeddings.tobytes() == loaded.model.encode(texts, "", 64).tobytes()
    for (vectors, words), (expected, expected_words) in zip(tokens, loaded.model.token_vectors(texts, 64), strict=True):
        assert words == expected_words and vectors.tobytes() == expected.tobytes()

    context, pairs = _store_without_answers(10)
    texts_read: list[str] = []
    original_read, original_encode = onnx_backend.OnnxModel.read, onnx_backend.OnnxModel.encode

    def read(self, texts, *args, **kwargs):  # type: ignore[no-untyped-def]
        texts_read.extend(texts)
        return original_read(self, texts, *args, **kwargs)

    def encode(self, texts, *args, **kwargs):  # type: ignore[no-untyped-def]
        texts_read.extend(texts)
        return original_encode(self, texts, *args, **kwargs)

    judge = CombinedJudge()
    judge.prepare()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(onnx_backend.OnnxModel, "read", read)
        patch.setattr(onnx_backend.OnnxModel, "encode", encode)
        judge.fit(context)
        grades = list(judge.grade_many(pairs))
    assert len(grades) == len(pairs)
    every = {query.text for query, _ in pairs} | {memory.content for memory in context.corpus.values()}
    assert sorted(texts_read) == sorted(every)  # each text once, through one pass
