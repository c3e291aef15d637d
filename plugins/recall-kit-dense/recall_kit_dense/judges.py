"""The `embedding` and `combined` relevance judges: cosine similarity between a query and a memory
under the dense retriever's model (the bundled MiniLM by default), alone against a threshold, or
with the answer overlap and the systems' ranks and scores in a logistic regression fitted on
labelled pairs by cross-fitting (Chernozhukov et al. 2018): a labelled pair is graded only by a
model fitted on other queries' labels."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recall_kit.plugin import (
    JudgingContext,
    Memory,
    OptionError,
    PairEvidence,
    Query,
    RelevanceJudge,
    answer_overlap,
    content_words,
    fit_logistic,
    paired_inner_products,
    probabilities,
)
from recall_kit_dense.models import DEFAULT_MODEL, LoadedModel, resolve_model
from recall_kit_dense.relevance import Relevance, TokenMatch, reading_model

if TYPE_CHECKING:
    import numpy as np

#: The signals the combined judge may use (its `signals` option names a subset): the answer's
#: words in the memory, the question's words in it, similarities (question, answer, both, against
#: the memory), the relevance model's columns (relevance.py: token match, what the question asks
#: for, standing among the query's candidates), each system's rank and score and each leg's rank, and
#: the question against the memory's neighbours in its session (`_neighbour_columns`).
SIGNALS = ("answer", "question", "similarity", "relevance", "ranks", "neighbours")
#: The default signals: the texts' alone (chosen on LoCoMo dev, docs/models.md). Ranks are opt-in:
#: on a sample that adds the labelled relevant memories to the systems' top results, "not ranked"
#: means "added because relevant". Neighbours are opt-in: on LoCoMo dev they lift the kappa without
#: answers (0.568 -> 0.590) but not with them (0.730 -> 0.725), nor on multi-hop questions (0.45 ->
#: 0.43), for more of the judge's time (2.94 against 2.74 s per 1,000 pairs without answers in the
#: same run; docs/models.md).
DEFAULT_SIGNALS = ("answer", "question", "similarity", "relevance")
#: Words compared by their first letters: a crude stemmer ("painted", "painting" -> "paint").
STEM = 5


def word_shares(wanted: str | None, text: str) -> tuple[float, float]:
    """The share of `wanted`'s content words `text` holds, whole and by their first `STEM` letters."""
    share = answer_overlap(wanted, text)
    if share is None or wanted is None:
        return 0.0, 0.0
    stems = {word[:STEM] for word in content_words(wanted)} or {word[:STEM] for word in wanted.lower().split()}
    found = {word[:STEM] for word in content_words(text)} | {word[:STEM] for word in text.lower().split()}
    return share, len(stems & found) / len(stems) if stems else 0.0


def grade_of(value: float, threshold: float) -> int:
    """A score in [0, 1] as a grade: 0 below `threshold`, 2 from it, 3 in the top half above it."""
    if value < threshold:
        return 0
    return 3 if value >= (1 + threshold) / 2 else 2


class Similarity:
    """Cosine similarities of (query, memory) texts under one model, each text embedded once."""

    def __init__(self, model: str, device: str, reader: TokenMatch | None = None) -> None:
        self.model, self.device = model, device
        self._vectors: dict[str, Any] = {}
        #: Where the same model's token vectors are read too (the combined judge's relevance
        #: signal): each text's embedding then comes from that one pass.
        self.reader = reader

    def check(self) -> None:
        """Find the model (an unknown name fails here, before any file is written)."""
        resolve_model(self.model)

    def _loaded(self) -> LoadedModel:
        return reading_model(self.model, self.device)

    def of(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """The cosine similarity of each (query text, memory text), summed in float64 and on the
        grid (`recall_kit.plugin.paired_inner_products`): the same on every CPU for the same embeddings."""
        import numpy as np

        missing = list(dict.fromkeys(text for pair in pairs for text in pair if text not in self._vectors))
        read = self.reader.embeddings_of(missing) if missing and self.reader is not None else None
        if read is not None:
            self._vectors.update(zip(missing, read, strict=True))
        elif missing:
            loaded = self._loaded()
            with loaded.lock:
                if loaded.backend == "onnx":
                    vectors = loaded.model.encode(missing, "", 64)
                else:
                    vectors = loaded.model.encode(missing, batch_size=64, normalize_embeddings=True,
                                                  convert_to_numpy=True, show_progress_bar=False)
            self._vectors.update(zip(missing, vectors, strict=True))
        if not pairs:
            return np.zeros(0)
        return paired_inner_products(np.stack([self._vectors[a] for a, _ in pairs]),
                                     np.stack([self._vectors[b] for _, b in pairs]))


#: The embedding judge's default threshold for each text it compares with the memory: the one
#: with the best kappa on LoCoMo's dev conversations (docs/models.md; chosen there, so optimistic there).
THRESHOLDS = {"question": 0.475, "answer": 0.3}


class EmbeddingJudge(RelevanceJudge):
    """Relevant when the cosine similarity of the query (or its answer) and the memory reaches `threshold`."""

    description = "cosine similarity of query (or its answer) and memory under the dense model (bundled MiniLM)"

    @dataclass(frozen=True)
    class Options:
        #: The sentence-transformers model (a name or folder, as `-o dense.model=`); not `model`,
        #: which `--model` fills for a language-model judge.
        embedder: str = DEFAULT_MODEL
        device: str = "cpu"
        #: What is compared with the memory: the query's "question" text, or its "answer" (queries
        #: without one are left ungraded).
        against: str = "question"
        #: The similarity from which a memory is relevant (None: THRESHOLDS[against]).
        threshold: float | None = None

    @property
    def threshold(self) -> float:
        found = self.options.threshold
        return THRESHOLDS[self.options.against] if found is None else float(found)

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._similarity = Similarity(self.options.embedder, self.options.device)

    def prepare(self) -> None:
        if self.options.against not in THRESHOLDS:
            raise OptionError(f"embedding.against must be one of {', '.join(THRESHOLDS)}, got {self.options.against!r}.")
        if not -1 <= self.threshold <= 1:
            raise OptionError(f"embedding.threshold must lie in [-1, 1], got {self.threshold}.")
        self._similarity.check()

    def grade(self, query: Query, memory: Memory) -> int | None:
        return next(self.grade_many([(query, memory)]))

    def grade_many(self, pairs: Sequence[tuple[Query, Memory]]) -> Iterator[int | None]:
        by_answer = self.options.against == "answer"
        texts = [query.answer if by_answer else query.text for query, _ in pairs]
        kept = [(text, memory.content) for text, (_, memory) in zip(texts, pairs, strict=True) if text]
        values = iter(self._similarity.of(kept))
        for text in texts:
            yield grade_of(float(next(values)), self.threshold) if text else None

    def provenance(self) -> Mapping[str, Any]:
        return {"judge": "embedding", "judge_model": self.options.embedder, "judge_against": self.options.against,
                "judge_threshold": self.threshold}


@dataclass
class _Fitted:
    """One logistic regression (with its feature scaling) and the probability it calls relevant from."""

    model: Any
    threshold: float


class CombinedJudge(RelevanceJudge):
    """A logistic regression over the answer overlap, the similarity and the systems' ranks and
    scores, fitted on the labelled pairs by cross-fitting over queries."""

    description = ("a logistic regression over answer and question words, similarity, the relevance model (and the "
                   "systems' ranks), cross-fitted on labelled pairs")
    learns = True

    @dataclass(frozen=True)
    class Options:
        #: The sentence-transformers model (a name or folder, as `-o dense.model=`); not `model`,
        #: which `--model` fills for a language-model judge.
        embedder: str = DEFAULT_MODEL
        device: str = "cpu"
        #: Folds of the cross-fitting (queries split among them at random, by the context's seed).
        folds: int = 5
        #: The signals used, comma-separated: answer, question, similarity, relevance, ranks (each
        #: system's rank and score and each leg's rank; opt-in, see DEFAULT_SIGNALS).
        signals: str = ",".join(DEFAULT_SIGNALS)

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._relevance = Relevance(self.options.embedder, self.options.device)
        self._similarity = Similarity(self.options.embedder, self.options.device,
                                      self._relevance.tokens if "relevance" in self.signals else None)
        self._context: JudgingContext | None = None
        self._fold_of: dict[str, int] = {}
        self._fitted: dict[int, _Fitted] = {}
        #: (query id, memory id) -> the probability its grade came from, since the last fit.
        self._probability: dict[tuple[str, Any], float] = {}
        self._near: dict[Any, list[Any]] | None = None

    @property
    def signals(self) -> tuple[str, ...]:
        return tuple(name.strip() for name in self.options.signals.split(",") if name.strip())

    def prepare(self) -> None:
        unknown = sorted(set(self.signals) - set(SIGNALS))
        if unknown or not self.signals:
            raise OptionError(f"combined.signals: unknown {', '.join(unknown) or '(none given)'}; "
                              f"choose among {', '.join(SIGNALS)}.")
        if self.options.folds < 2:
            raise OptionError(f"combined.folds must be at least 2, got {self.options.folds}.")
        if "similarity" in self.signals or "relevance" in self.signals:
            self._similarity.check()

    def features(self, pairs: Sequence[tuple[Query, Memory]]) -> np.ndarray:
        """One row of signals per pair, in the order the context fixes."""
        import numpy as np

        context = self._context
        assert context is not None
        columns: list[Any] = []
        if "answer" in self.signals:
            columns += list(zip(*[word_shares(query.answer, memory.content) for query, memory in pairs], strict=True))
            columns.append([float(bool(query.answer)) for query, _ in pairs])
        if "question" in self.signals:
            columns += list(zip(*[word_shares(query.text, memory.content) for query, memory in pairs], strict=True))
        if "similarity" in self.signals:
            columns += self._similarities(pairs)
        if "relevance" in self.signals:
            columns += list(self._relevance.columns(pairs, context, self._read, "ranks" in self.signals).T)
        if "neighbours" in self.signals:
            columns += self._neighbour_columns(pairs, context)
        if "ranks" in self.signals:
            found = [context.evidence.get((query.query_id, memory.id), PairEvidence()) for query, memory in pairs]
            for system in context.systems:
                columns.append([1 / item.ranks[system] if system in item.ranks else 0.0 for item in found])
                columns.append([item.scores.get(system, 0.0) for item in found])
            for leg in context.legs:
                columns.append([1 / item.leg_ranks[leg] if leg in item.leg_ranks else 0.0 for item in found])
        return np.column_stack([np.asarray(column, dtype=float) for column in columns])

    def _neighbour_columns(self, pairs: Sequence[tuple[Query, Memory]], context: JudgingContext) -> list[Any]:
        """The question against the memory's neighbours (the memory just before it and the one just
        after it in its session, else under its parent, in the store's order: a chat's question turn
        and its reply): the best similarity with either, and the share of the question's words
        (whole, stemmed) in the memory read with both. 0 where a memory has no neighbour (a store
        without sessions or parents: the columns are then constant, and the fit gives them no weight)."""
        import numpy as np

        near = self._neighbours(context)
        best, whole, stemmed = np.zeros(len(pairs)), np.zeros(len(pairs)), np.zeros(len(pairs))
        having = [index for index, (_, memory) in enumerate(pairs) if near.get(memory.id)]
        flat = [(i, other) for i in having for other in near[pairs[i][1].id]]
        values = self._similarity.of([(pairs[i][0].text, context.corpus[other].content) for i, other in flat])
        for (i, _), value in zip(flat, values, strict=True):
            best[i] = max(best[i], float(value))
        for i in having:
            query, memory = pairs[i]
            whole[i], stemmed[i] = word_shares(query.text, "\n".join(
                [memory.content, *(context.corpus[other].content for other in near[memory.id])]))
        return [best, whole, stemmed]

    def _neighbours(self, context: JudgingContext) -> dict[Any, list[Any]]:
        """Each memory's neighbours in its group (its scope and session, else its scope and parent),
        one on each side in the store's order (measured: one on each side 0.590 kappa without answers
        on LoCoMo dev, two 0.581; docs/models.md)."""
        if self._near is not None:
            return self._near
        groups: dict[Any, list[Any]] = {}
        for memory in context.corpus.values():
            key = memory.extra.get("session") if "session" in memory.extra else memory.parent_id
            if key is not None:
                groups.setdefault((memory.scope, str(key)), []).append(memory.id)
        near: dict[Any, list[Any]] = {}
        for members in groups.values():
            for position, doc in enumerate(members):
                near[doc] = [members[j] for j in (position - 1, position + 1) if 0 <= j < len(members)]
        self._near = near
        return near

    def _read(self, texts: Sequence[tuple[str, str]]) -> np.ndarray:
        """The question's similarity and word shares (whole, stemmed) with the memory, per (question, memory) text."""
        import numpy as np

        shares = np.array([word_shares(question, memory) for question, memory in texts]).reshape(len(texts), 2)
        return np.column_stack([self._similarity.of(texts), shares])

    def _similarities(self, pairs: Sequence[tuple[Query, Memory]]) -> list[Any]:
        """Cosine similarity with the memory of the question, of its answer, and of both (0 without an answer)."""
        import numpy as np

        columns = [self._similarity.of([(query.text, memory.content) for query, memory in pairs])]
        answered = [index for index, (query, _) in enumerate(pairs) if query.answer]
        for text in (lambda query: query.answer, lambda query: f"{query.text} {query.answer}"):
            column = np.zeros(len(pairs))
            if answered:
                column[answered] = self._similarity.of([(text(pairs[i][0]), pairs[i][1].content) for i in answered])
            columns.append(column)
        return columns

    def fit(self, context: JudgingContext) -> None:
        """Fit one model per fold on the other folds' labelled queries, and one on them all (for
        pairs of queries nobody labelled)."""
        import numpy as np

        self._context = context
        self._near = None
        self._probability = {}
        labelled = [(context.queries[qid], context.corpus[doc], int(grade >= 1))
                    for qid, grades in sorted(context.labels.items()) if qid in context.queries
                    for doc, grade in sorted(grades.items()) if doc in context.corpus]
        truth = np.array([label for _, _, label in labelled])
        queries = sorted({query.query_id for query, _, _ in labelled})
        if len(set(truth.tolist())) < 2 or len(queries) < 2:
            raise OptionError("The combined judge learns from labelled pairs of both kinds (relevant and not) "
                              f"over at least 2 queries; it got {len(labelled)} pairs over {len(queries)} queries.")
        random.Random(context.seed).shuffle(queries)
        folds = min(self.options.folds, len(queries))
        self._fold_of = {query_id: index % folds for index, query_id in enumerate(queries)}
        rows = self.features([(query, memory) for query, memory, _ in labelled])
        fold = np.array([self._fold_of[query.query_id] for query, _, _ in labelled])
        for k in range(folds):
            self._fitted[k] = _fit(rows[fold != k], truth[fold != k])
        self._fitted[-1] = _fit(rows, truth)

    def grade(self, query: Query, memory: Memory) -> int | None:
        return next(self.grade_many([(query, memory)]))

    def grade_many(self, pairs: Sequence[tuple[Query, Memory]]) -> Iterator[int | None]:
        values, thresholds = self._probabilities(pairs)
        yield from (grade_of(value, threshold) for value, threshold in zip(values, thresholds, strict=True))

    def probabilities(self, pairs: Sequence[tuple[Query, Memory]]) -> list[float]:
        """Each pair's probability of relevance under the model its grade came from (its query's
        fold model; the model of all for a query nobody labelled), on the grid: remembered from
        `grade_many`, computed for pairs it did not grade."""
        missing = [pair for pair in pairs if (pair[0].query_id, pair[1].id) not in self._probability]
        if missing:
            self._probabilities(missing)
        return [self._probability[(query.query_id, memory.id)] for query, memory in pairs]

    def _probabilities(self, pairs: Sequence[tuple[Query, Memory]]) -> tuple[list[float], list[float]]:
        """Each pair's probability and the threshold of the model that gave it (remembered)."""
        if self._context is None:
            raise OptionError("The combined judge grades only after it was fitted on labelled pairs.")
        import numpy as np

        rows = self.features(pairs)
        models = np.array([self._fold_of.get(query.query_id, -1) for query, _ in pairs])
        values, thresholds = np.zeros(len(pairs)), np.zeros(len(pairs))
        for key in np.unique(models):  # each pair by its query's fold model; unlabelled queries by the model of all
            fitted, chosen = self._fitted[int(key)], models == key
            values[chosen] = probabilities(fitted.model, rows[chosen])
            thresholds[chosen] = fitted.threshold
        for (query, memory), value in zip(pairs, values.tolist(), strict=True):
            self._probability[(query.query_id, memory.id)] = value
        return values.tolist(), thresholds.tolist()

    def provenance(self) -> Mapping[str, Any]:
        return {"judge": "combined", "judge_model": self.options.embedder, "judge_signals": self.options.signals,
                "judge_folds": self.options.folds}


def _fit(rows: np.ndarray, truth: np.ndarray) -> _Fitted:
    """A scaled logistic regression on `rows`, fitted to convergence, and the probability
    threshold at which its calls agree best (Cohen's kappa) with `truth` on the rows it was fitted
    on. Probabilities are compared on `recall_kit.plugin.GRID` and the fit converges whatever the
    CPU's arithmetic (`fit_logistic`), so the grades are the same on every machine."""
    import numpy as np

    if len(set(truth.tolist())) < 2:  # a fold whose other folds hold one kind only
        raise OptionError("The combined judge's folds hold labels of one kind only: label more pairs, or fewer folds.")
    model = fit_logistic(rows, truth)
    fitted = probabilities(model, rows)
    candidates = np.unique(np.round(fitted, 3))
    kappas = kappas_at(truth, fitted, candidates)
    return _Fitted(model, float(candidates[int(np.argmax(kappas))]))


def kappas_at(truth: np.ndarray, probabilities: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Cohen's kappa of `truth` (0/1) against ``probabilities >= t`` for each threshold t, in one
    sort (sklearn's `cohen_kappa_score` per threshold took seconds on the 30,000 pairs of a study;
    tests/test_dense_judges.py checks every value against it)."""
    import numpy as np

    order = np.sort(probabilities)
    ranked = truth[np.argsort(probabilities, kind="stable")]
    n, relevant = len(truth), float(truth.sum())
    below = np.searchsorted(order, thresholds, side="left")  # predicted not relevant: probability < t
    relevant_below = np.concatenate(([0.0], np.cumsum(ranked)))[below]
    true_positive = relevant - relevant_below
    predicted = n - below
    true_negative = below - relevant_below
    observed = (true_positive + true_negative) / n
    expected = (predicted * relevant + below * (n - relevant)) / (n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected < 1, (observed - expected) / (1 - expected), 0.0)
