"""The `relevance` signal of the combined judge: what a query and a memory say read together, with
no reference answer. Three kinds of column, each computed from the texts and the systems' rankings
alone (never a label):

- token match (late interaction, ColBERT's MaxSim: Khattab & Zaharia, SIGIR 2020): each query
  token's best cosine with any memory token under the dense model's (the bundled MiniLM's)
  contextual token vectors, averaged over the query's tokens, and over its content words' tokens;
- standing among the query's candidates: a value's gap to the best of the memories the systems
  ranked for the query, its z-score among them and its reciprocal rank there (relevance is
  relative: the turn that answers a question is the one that matches it best of those at hand);
- what the question asks for: a "when" question against a memory that holds a time expression, a
  "how many" question against one that holds a number, the memory's length, and whether the
  speaker a memory opens with ("Name: ...", a chat transcript's turn) is named in the question.

Measured on LoCoMo dev with every reference answer removed (docs/models.md): the combined judge's
kappa on the bm25 top-10 pool goes from 0.34 (question words and similarity) to about 0.57.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from recall_kit.plugin import JudgingContext, Memory, PairEvidence, Query, content_words, inner_products, on_grid
from recall_kit_dense.models import LoadedModel, load_model, resolve_model, usable_cpus

if TYPE_CHECKING:
    import numpy as np

#: Tokens of the tokenizer that are no part of the text.
_SPECIAL = frozenset({"[CLS]", "[SEP]", "[PAD]", "<s>", "</s>", "<pad>"})
#: A time expression: what a "when" question's answer looks like in a conversation.
TIME = re.compile(r"\b(yesterday|today|tomorrow|tonight|last|next|ago|since|recently|soon|week|weekend|month|"
                  r"year|morning|evening|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|"
                  r"february|march|april|may|june|july|august|september|october|november|december|\d{4})\b",
                  re.IGNORECASE)
#: A count: what a "how many" question's answer looks like.
COUNT = re.compile(r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|several|few|many)\b", re.IGNORECASE)
#: A memory that opens with its speaker, as a chat turn does: "Caroline: ...".
SPEAKER = re.compile(r"^\s*([^:\n]{1,40}):")


class TokenMatch:
    """MaxSim of (query, memory) texts under one model's token vectors (`reading_model`'s: ONNX
    Runtime's last hidden state on a CPU, else sentence-transformers'), each text encoded once."""

    def __init__(self, model: str, device: str) -> None:
        self.model, self.device = model, device
        self._tokens: dict[str, tuple[Any, list[str]]] = {}
        #: Each text's embedding, from the forward pass that gave its token vectors (ONNX Runtime
        #: only): `embeddings_of` hands them to the judge's similarity, which then runs no pass of its own.
        self._embeddings: dict[str, Any] = {}

    def check(self) -> None:
        """Find the model (an unknown name fails here, before any file is written)."""
        resolve_model(self.model)

    def embeddings_of(self, texts: Sequence[str]) -> list[Any] | None:
        """Each text's embedding (unit length, float32, as the ONNX model's `encode` gives it), read
        in the same pass as its token vectors; None where the model runs on torch (nothing read then:
        the caller's own pass embeds them)."""
        if self._loaded().backend != "onnx":
            return None
        self._encode(texts)
        return [self._embeddings[text] for text in texts]

    def of(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Per pair: the mean over the query's tokens of each one's best cosine with the memory's
        tokens, and the same over the tokens of the query's content words (all its tokens when it
        has none)."""
        import numpy as np

        self._encode([text for pair in pairs for text in pair])
        out = np.zeros((len(pairs), 2))
        for row, (query, memory) in enumerate(pairs):
            (vectors, tokens), (others, _) = self._tokens[query], self._tokens[memory]
            if not len(vectors) or not len(others):
                continue
            best = inner_products(vectors, others).max(axis=1)  # float64 on the grid: the same on every CPU
            words = content_words(query)
            kept = [_is_content(token, words) for token in tokens]
            out[row] = float(best.mean()), float(best[kept].mean()) if any(kept) else float(best.mean())
        return on_grid(out)

    def _loaded(self) -> LoadedModel:
        return reading_model(self.model, self.device)

    def _encode(self, texts: Sequence[str]) -> None:
        import numpy as np

        missing = list(dict.fromkeys(text for text in texts if text not in self._tokens))
        if not missing:
            return
        loaded = self._loaded()
        with loaded.lock:
            if loaded.backend == "onnx":
                embeddings, found = loaded.model.read(missing, 64)
                self._embeddings.update(zip(missing, embeddings, strict=True))
            else:
                outputs = loaded.model.encode(missing, batch_size=64, output_value=None, show_progress_bar=False)
                tokenizer = loaded.model.tokenizer
                found = [(output["token_embeddings"].float().numpy(),
                          tokenizer.convert_ids_to_tokens(output["input_ids"].tolist())) for output in outputs]
        for text, (vectors, tokens) in zip(missing, found, strict=True):
            kept = [index for index, token in enumerate(tokens) if token not in _SPECIAL]
            vectors = np.asarray(vectors, dtype=np.float32)[kept]
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            self._tokens[text] = (vectors / np.where(norms > 0, norms, 1.0), [tokens[index] for index in kept])


def reading_model(model: str, device: str) -> LoadedModel:
    """The model a judge reads texts with: on ONNX Runtime on a CPU where it is installed (as the
    dense leg's `auto` backend: no torch imported once the model is exported), else on torch."""
    source = resolve_model(model)
    if device == "cpu":
        from recall_kit_dense.onnx_backend import load_onnx_model, runtime_available

        if runtime_available():
            loaded = load_onnx_model(source, None, usable_cpus())
            if loaded is not None:
                return loaded
    return load_model(source, device)


def _is_content(token: str, words: set[str]) -> bool:
    """Whether a word piece belongs to one of the query's content words (whole, or its start)."""
    piece = token.lstrip("#▁Ġ").lower()
    return piece in words or (len(piece) > 2 and any(word.startswith(piece) for word in words))


def asked_for(question: str, memory: str) -> list[float]:
    """What the question asks for against what the memory holds: whether it is a "when" question,
    that and a time expression in the memory, a time expression alone, a "how many" question and a
    count in the memory, the memory's log length in words, and its speaker named in the question."""
    import math

    lowered = question.lower()
    when = float(lowered.startswith(("when", "how long")))
    has_time = float(bool(TIME.search(memory)))
    speaker = SPEAKER.match(memory)
    named = float(speaker is not None and speaker.group(1).strip().lower() in lowered)
    return [when, when * has_time, has_time, float("how many" in lowered and bool(COUNT.search(memory))),
            math.log1p(len(memory.split())), named]


#: The columns `asked_for` returns, in order.
ASKED_FOR = ("when", "when_and_time", "time", "count", "log_length", "speaker_named")


def standing(values: Callable[[Sequence[tuple[str, str]]], np.ndarray], pairs: Sequence[tuple[str, str]],
             candidates: Mapping[str, Sequence[str]]) -> np.ndarray:
    """How each pair's values stand among its query's candidates: three columns per column of
    `values` (a function of (query id, memory id) pairs returning one row per pair): the gap to the
    best candidate, the z-score among them, and 1 / (1 + the number of candidates above it). A
    query's candidates are `candidates[query id]` (the memories the systems ranked for it) and the
    pair's own memory, so a pair's standing does not depend on which others are graded with it."""
    import numpy as np

    groups: dict[str, dict[str, None]] = {}
    for query, memory in pairs:
        groups.setdefault(query, dict.fromkeys(candidates.get(query, ())))[memory] = None
    every = [(query, memory) for query, memories in groups.items() for memory in memories]
    table = np.asarray(values(every), dtype=float).reshape(len(every), -1)
    at = {pair: index for index, pair in enumerate(every)}
    by_query = {query: table[[at[(query, memory)] for memory in memories]] for query, memories in groups.items()}
    out = np.zeros((len(pairs), 3 * table.shape[1]))
    for row, (query, memory) in enumerate(pairs):
        group, value = by_query[query], table[at[(query, memory)]]
        spread = group.std(axis=0)
        gap = value - group.max(axis=0)
        z = (value - group.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
        above = 1.0 / (1.0 + (group > value).sum(axis=0))
        out[row] = np.column_stack([gap, z, above]).ravel()
    return out


#: A query's candidates for `standing`: the memories some system ranked this high for it.
CANDIDATE_DEPTH = 10


class Relevance:
    """The relevance signal's columns for (query, memory) pairs: token match, what the question asks
    for, and the standing among the query's candidates of the similarity, the question's word
    shares, the token match (and, with the systems' ranks, each system's score)."""


    def __init__(self, model: str, device: str) -> None:
        self.tokens = TokenMatch(model, device)
        #: The evidence the candidates were read from, and each query's candidates (read once a context).
        self._candidates: tuple[Any, dict[str, list[str]]] = (None, {})

    def check(self) -> None:
        self.tokens.check()

    def columns(self, pairs: Sequence[tuple[Query, Memory]], context: JudgingContext,
                read_by_judge: Callable[[Sequence[tuple[str, str]]], np.ndarray], scores: bool) -> np.ndarray:
        """One row per pair. `read_by_judge`: the judge's own columns of (query text, memory text)
        pairs (its similarity and word shares), whose standing is taken too; `scores`: whether the
        systems' scores join the standing."""
        import numpy as np

        texts = {query.query_id: query.text for query, _ in pairs}
        candidates = {query: self.candidates(context).get(query, []) for query in texts}
        memories = {doc: context.corpus[doc].content for docs in candidates.values() for doc in docs}
        memories.update({memory.id: memory.content for _, memory in pairs})

        def values(ids: Sequence[tuple[str, str]]) -> np.ndarray:
            read = [(texts[query], memories[doc]) for query, doc in ids]
            columns = [np.asarray(read_by_judge(read)).reshape(len(read), -1), self.tokens.of(read)]
            if scores:
                found = [context.evidence.get(pair, PairEvidence()) for pair in ids]
                columns.append(np.array([[item.scores.get(system, 0.0) for system in context.systems]
                                         for item in found]).reshape(len(ids), len(context.systems)))
            return np.column_stack(columns)

        read = [(query.text, memory.content) for query, memory in pairs]
        return on_grid(np.column_stack([self.tokens.of(read), np.array([asked_for(*pair) for pair in read]),
                                        standing(values, [(query.query_id, memory.id) for query, memory in pairs],
                                                 candidates)]))

    def candidates(self, context: JudgingContext) -> dict[str, list[str]]:
        """Each query's candidates: the memories of the corpus some system ranked in its top
        `CANDIDATE_DEPTH`, in id order."""
        if self._candidates[0] is not context.evidence:
            found: dict[str, list[str]] = {}
            for (query_id, doc), evidence in context.evidence.items():
                if doc in context.corpus and min(evidence.ranks.values(), default=0) <= CANDIDATE_DEPTH:
                    found.setdefault(query_id, []).append(doc)
            self._candidates = (context.evidence, {query: sorted(docs) for query, docs in found.items()})
        return self._candidates[1]
