"""Query generators written by a model: `llm-paraphrase` (one memory, a question in other words,
checked by word overlap) and `llm-multihop` (two memories that share a name but little wording,
a question that needs both). The seed study's procedure, the LongMemEval pipeline inverted."""

from __future__ import annotations

import random
import re
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from recall_kit.plugin import Corpus, GeneratedQuery, Memory, QueryGenerator, content_words, word_overlap
from recall_kit_llm.models import CallCache, JsonAsker, cost_line, get_chat_model

PARAPHRASE_VERSION = "paraphrase-1"
MULTIHOP_VERSION = "multihop-1"
#: Output-token caps: a one-question JSON object needs a few dozen.
QUESTION_MAX_TOKENS = 120

QUESTION_SCHEMA = {
    "type": "object",
    "properties": {"question": {"type": "string"}},
    "required": ["question"],
}

PARAPHRASE_SYSTEM = (
    "You write search questions for testing a memory store. Given one memory, write one question "
    "a person might ask whose answer is that memory, in different words: no distinctive word of "
    "the memory may appear (use synonyms and descriptions instead of its names and terms)."
)
MULTIHOP_SYSTEM = (
    "You write search questions for testing a memory store. Given several memories that share a "
    "person, place or event, write one question that can only be answered by combining all of "
    "them: each memory must hold a part of the answer. Do not copy their wording."
)


@dataclass(frozen=True)
class ModelOptions:
    """What every model-driven part takes: `-o NAME.KEY=VALUE`, or `--model` / `--allow-remote`."""

    #: The `llm` model name or alias (`llm models` lists them).
    model: str = ""
    #: Let a remote model receive memory text.
    allow_remote: bool = False
    #: Tries per item before it is skipped (a malformed or rejected answer asks again).
    tries: int = 3
    #: Retries of a call that failed transiently, with exponential back-off from `retry_wait` s.
    retries: int = 4
    retry_wait: float = 1.0
    #: Keep every model answer in the user's cache folder: a rerun costs nothing.
    cache: bool = True
    #: Model calls in flight (`--concurrency`; None: 16); a model that runs in this process takes
    #: one at a time.
    concurrency: int | None = None
    #: Output tokens an answer may use (None: each part's own cap, sized to the JSON it asks for).
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.tries < 1 or self.retries < 0 or self.retry_wait < 0:
            raise ValueError("tries must be >= 1, retries and retry_wait >= 0")
        if (self.concurrency is not None and self.concurrency < 1) or (self.max_tokens is not None and self.max_tokens < 1):
            raise ValueError("concurrency and max_tokens must be at least 1")


def asker(options: Any, version: str, max_tokens: int | None = None) -> JsonAsker:
    """The JsonAsker of a model part: its options, and `max_tokens` unless the options set one."""
    model = get_chat_model(options.model, options.allow_remote)
    return JsonAsker(model, version, CallCache(enabled=options.cache), options.retries, options.retry_wait,
                     options.tries, concurrency=options.concurrency, max_tokens=options.max_tokens or max_tokens)


def question_check(memories: Sequence[Memory], max_overlap: float) -> Callable[[dict[str, Any]], tuple[str, float] | None]:
    """A validator of a model's answer: its `question` (at least two content words), kept with its
    largest word Jaccard against `memories` when that is at most `max_overlap`."""

    def check(answer: dict[str, Any]) -> tuple[str, float] | None:
        question = answer.get("question")
        if not isinstance(question, str):
            return None
        question = " ".join(question.split())
        if len(content_words(question)) < 2:
            return None
        overlap = max(word_overlap(question, memory) for memory in memories)
        return (question, overlap) if overlap <= max_overlap else None

    return check


class ParaphraseGenerator(QueryGenerator):
    """Paraphrase stratum: one seed memory, a question in other words from a model, kept only when
    its word Jaccard with the memory is at most `max_overlap` (asked again, then dropped)."""

    stratum = "paraphrase"
    description = "a model's question about one memory in other words (word Jaccard <= 0.18)"

    @dataclass(frozen=True)
    class Options(ModelOptions):
        #: Largest word Jaccard (content words) of the question with its memory: the study's 0.18.
        max_overlap: float = 0.18
        #: Memories with fewer content words than this are not seeds (too little to rephrase).
        min_words: int = 6

    def generate(self, corpus: Corpus, count: int, seed: int) -> list[GeneratedQuery]:
        started = time.monotonic()
        ask = asker(self.options, PARAPHRASE_VERSION, QUESTION_MAX_TOKENS)
        order = [m for m in corpus if len(content_words(m.content)) >= self.options.min_words]
        random.Random(seed).shuffle(order)
        queries: list[GeneratedQuery] = []
        used: set[str] = set()
        sent: deque[Memory] = deque()

        def jobs() -> Iterator[Any]:
            # Seeds go out ahead of the answers (concurrency at once) while questions are still
            # wanted; answers are taken in seed order below, so the questions kept are those a
            # one-at-a-time run keeps.
            for memory in order:
                if len(queries) >= count:
                    return
                if (memory.parent_id or memory.id) not in used:
                    sent.append(memory)
                    yield (PARAPHRASE_SYSTEM, f"MEMORY:\n{memory.content}\n\nWrite the question.",
                           QUESTION_SCHEMA, question_check((memory,), self.options.max_overlap))

        for found in ask.ask_many(jobs(), self.name):
            memory = sent.popleft()
            if len(queries) >= count:
                break
            unit = memory.parent_id or memory.id
            if unit in used or found is None:
                continue
            used.add(unit)
            question, overlap = found
            queries.append(GeneratedQuery(
                text=question, relevance={unit: 1}, scope=memory.scope,
                provenance={"model": ask.model.model_id, "prompt_version": PARAPHRASE_VERSION,
                            "seed_ids": [memory.id], "overlap": round(overlap, 4)},
            ))
        _report(self.name, ask, len(queries), started)
        return queries


_NAME = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]\s*)$")


def names_in(memory: Memory) -> set[str]:
    """Capitalised names not at a sentence start (Odile Fenwick, Kestrel), and tags: what two
    memories may share as a person, place or event. The graph plugin's rules find the same kind."""
    found = {tag.casefold() for tag in memory.tags}
    for match in _NAME.finditer(memory.content):
        if not _SENTENCE_START.search(memory.content[: match.start()]):
            found.add(match.group().casefold())
    return found


def bridged_pairs(corpus: Corpus, max_share: float = 0.05, max_overlap: float = 0.2) -> Iterator[tuple[Memory, Memory]]:
    """Pairs of memories (different units) that share a name or tag held by at most `max_share`
    of the memories (at least 2) and whose content words overlap at most `max_overlap` (Jaccard)."""
    holders: dict[str, list[Memory]] = defaultdict(list)
    for memory in corpus:
        for name in names_in(memory):
            holders[name].append(memory)
    limit = max(2, int(max_share * len(corpus)))
    seen: set[tuple[str, str]] = set()
    for name in sorted(holders):
        group = holders[name]
        if not 2 <= len(group) <= limit:
            continue
        for i, first in enumerate(group):
            for second in group[i + 1:]:
                units = sorted((first.parent_id or first.id, second.parent_id or second.id))
                if units[0] == units[1] or (units[0], units[1]) in seen or first.scope != second.scope:
                    continue
                words_a, words_b = content_words(first.content), content_words(second.content)
                union = words_a | words_b
                if union and len(words_a & words_b) / len(union) <= max_overlap:
                    seen.add((units[0], units[1]))
                    yield first, second


class MultihopGenerator(QueryGenerator):
    """Multi-hop stratum: two memories that share a person, place or event (a name or tag few
    memories hold) but little wording, and a model's question that needs both; both are relevant."""

    stratum = "multihop"
    description = "a model's question needing two memories that share a name but little wording"

    @dataclass(frozen=True)
    class Options(ModelOptions):
        #: A bridging name held by more than this share of the memories bridges nothing.
        max_share: float = 0.05
        #: Largest content-word Jaccard between the two memories.
        max_pair_overlap: float = 0.2
        #: Largest word Jaccard of the question with either memory.
        max_overlap: float = 0.35

    def generate(self, corpus: Corpus, count: int, seed: int) -> list[GeneratedQuery]:
        started = time.monotonic()
        ask = asker(self.options, MULTIHOP_VERSION, QUESTION_MAX_TOKENS)
        pairs = list(bridged_pairs(corpus, self.options.max_share, self.options.max_pair_overlap))
        random.Random(seed).shuffle(pairs)
        queries: list[GeneratedQuery] = []
        used: set[str] = set()
        sent: deque[tuple[Memory, Memory]] = deque()

        def jobs() -> Iterator[Any]:  # sent ahead, taken in order: as ParaphraseGenerator does
            for first, second in pairs:
                if len(queries) >= count:
                    return
                if not used & {first.parent_id or first.id, second.parent_id or second.id}:
                    sent.append((first, second))
                    yield (MULTIHOP_SYSTEM,
                           f"MEMORY 1:\n{first.content}\n\nMEMORY 2:\n{second.content}\n\nWrite the question.",
                           QUESTION_SCHEMA, question_check((first, second), self.options.max_overlap))

        for found in ask.ask_many(jobs(), self.name):
            first, second = sent.popleft()
            if len(queries) >= count:
                break
            units = [first.parent_id or first.id, second.parent_id or second.id]
            if used & set(units) or found is None:
                continue  # each memory seeds one question: no stratum dominated by a few memories
            used.update(units)
            question, overlap = found
            queries.append(GeneratedQuery(
                text=question, relevance={unit: 1 for unit in units},
                scope=first.scope,
                provenance={"model": ask.model.model_id, "prompt_version": MULTIHOP_VERSION,
                            "seed_ids": [first.id, second.id], "overlap": round(overlap, 4)},
            ))
        _report(self.name, ask, len(queries), started)
        return queries


def _report(name: str, ask: JsonAsker, kept: int, started: float) -> None:
    import sys

    stats = ask.stats
    print(f"{name}: {kept} kept; {stats.calls} model calls, {stats.cached} from the cache, "
          f"{stats.malformed} answers rejected (malformed or too close to the memory's words), "
          f"{stats.skipped} seeds skipped", file=sys.stderr)
    print(cost_line(name, ask.cost(time.monotonic() - started), before=False), file=sys.stderr)
