"""Query generators written by a model: `llm-paraphrase` (one memory, a question in other words,
checked by word overlap) and `llm-multihop` (two memories that share a name but little wording,
a question that needs both). The seed study's procedure, the LongMemEval pipeline inverted."""

from __future__ import annotations

import random
import re
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall_kit.plugin import Corpus, GeneratedQuery, Memory, Query, QueryGenerator, content_words, word_overlap
from recall_kit_llm.models import JsonAsker, ModelOptions, asker, cost_line

#: paraphrase-3: paraphrase-1's words with an optional `answer` in the schema. paraphrase-2 also asked
#: for the answer in words, and the packaged Gemma 3 270M then copied the memory's words into the
#: question (every question of the local-model test rejected as too close).
PARAPHRASE_VERSION = "paraphrase-3"
MULTIHOP_VERSION = "multihop-2"
#: Output-token caps: a one-question JSON object needs a few dozen.
QUESTION_MAX_TOKENS = 120

QUESTION_SCHEMA = {
    "type": "object",
    "properties": {"question": {"type": "string"}, "answer": {"type": "string"}},
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
    "them: each memory must hold a part of the answer. Do not copy their wording. Also give "
    "its answer: the few words of the memories that answer it."
)


def question_check(memories: Sequence[Memory], max_overlap: float,
                   rejected: Counter[str] | None = None,
                   taken: set[str] | None = None) -> Callable[[dict[str, Any]], tuple[str, float, str | None] | None]:
    """A validator of a model's answer: its `question` (at least two content words), kept with its
    largest word Jaccard against `memories` when that is at most `max_overlap`, and the `answer`
    the model gave with it (None when it gave none: the answer judge then leaves the query alone). Each rejection is
    counted in `rejected` by reason (`too_short`, `too_close`, `duplicate`: the same text, case
    and spacing aside, as a question in `taken`)."""

    def reject(reason: str) -> None:
        if rejected is not None:
            rejected[reason] += 1

    def check(answer: dict[str, Any]) -> tuple[str, float, str | None] | None:
        question = answer.get("question")
        if not isinstance(question, str):
            return None
        question = " ".join(question.split())
        reason = None
        overlap = 0.0
        if len(content_words(question)) < 2:
            reason = "too_short"
        elif (overlap := max(word_overlap(question, memory) for memory in memories)) > max_overlap:
            reason = "too_close"
        elif taken is not None and question.casefold() in taken:
            reason = "duplicate"
        if reason is not None:
            reject(reason)
            return None
        given = answer.get("answer")
        given = " ".join(given.split())[:200] if isinstance(given, str) else ""
        return question, overlap, given or None

    return check


class ParaphraseGenerator(QueryGenerator):
    """Paraphrase stratum: one seed memory, a question in other words from a model, kept only when
    its word Jaccard with the memory is at most `max_overlap` (asked again, then dropped) and the
    model judge says the memory answers it (grade >= `min_grade`): low overlap alone keeps
    questions about nothing ("What is the memory store?")."""

    stratum = "paraphrase"
    description = "a model's question about one memory in other words (word Jaccard <= 0.18), judged about it"

    @dataclass(frozen=True)
    class Options(ModelOptions):
        #: Largest word Jaccard (content words) of the question with its memory: the study's 0.18.
        max_overlap: float = 0.18
        #: Memories with fewer content words than this are not seeds (too little to rephrase).
        min_words: int = 6
        #: Keep a question only when the model judge grades its seed memory at least `min_grade`
        #: for it (2: "answers the question"). Off: no check (say so wherever the data is used).
        about: bool = True
        min_grade: int = 2
        #: The judge's `llm` model (default: `model`).
        judge_model: str = ""
        #: Stop after this many seeds gave no question (0: twice the count asked, plus 10).
        max_failed_seeds: int = 0
        #: Where to write a sample of kept and rejected questions beside their memories, for a
        #: person to read (private file; default: the cache folder, its path printed).
        sample_file: str = ""
        sample_size: int = 20

    def generate(self, corpus: Corpus, count: int, seed: int) -> list[GeneratedQuery]:
        import sys

        started = time.monotonic()
        options = self.options
        ask = asker(options, PARAPHRASE_VERSION, QUESTION_MAX_TOKENS)
        judge = self._judge() if options.about else None
        order = [m for m in corpus if len(content_words(m.content)) >= options.min_words]
        random.Random(seed).shuffle(order)
        max_failed = options.max_failed_seeds or 2 * count + 10
        seeds = min(len(order), count + max_failed)
        per_seed = options.tries * (2 if judge else 1)
        print(f"{self.name}: at most {seeds * per_seed} model calls ({seeds} seeds x {options.tries} {'try' if options.tries == 1 else 'tries'}"
              + (", each question then judged" if judge else "") + "; cached answers cost none)", file=sys.stderr)
        queries: list[GeneratedQuery] = []
        used: set[str] = set()
        taken: set[str] = set()
        rejected: Counter[str] = Counter()
        sample: list[dict[str, Any]] = []
        failed = 0
        for memory in order:
            if len(queries) >= count or failed >= max_failed:
                break
            unit = memory.parent_id or memory.id
            if unit in used:
                continue
            found = ask.ask(PARAPHRASE_SYSTEM, f"MEMORY:\n{memory.content}\n\nWrite the question.",
                            QUESTION_SCHEMA, question_check((memory,), options.max_overlap, rejected, taken))
            if found is None:
                failed += 1
                continue
            question, overlap, answer = found
            grade = judge.grade(Query(f"seed-{memory.id}", question), memory) if judge else None
            if judge and (grade is None or grade < options.min_grade):
                rejected["unjudged" if grade is None else "not_about_its_memory"] += 1
                failed += 1
                if len(sample) < options.sample_size:
                    sample.append({"kept": False, "reason": "not_about_its_memory" if grade is not None else "unjudged",
                                   "grade": grade, "question": question, "memory_id": memory.id, "memory": memory.content})
                continue
            used.add(unit)
            taken.add(question.casefold())
            provenance: dict[str, Any] = {"model": ask.model.model_id, "prompt_version": PARAPHRASE_VERSION,
                                          "seed_ids": [memory.id], "overlap": round(overlap, 4)}
            if judge:
                provenance.update(about_grade=grade, about_judge=judge.provenance()["judge_model"])
            if len(sample) < options.sample_size:
                sample.append({"kept": True, "grade": grade, "question": question, "memory_id": memory.id,
                               "memory": memory.content})
            queries.append(GeneratedQuery(text=question, relevance={unit: 1}, scope=memory.scope, answer=answer,
                                          provenance=provenance))
        checked = sum(rejected[reason] for reason in ("too_short", "too_close", "duplicate"))
        rejected["malformed"] = ask.stats.malformed - checked  # not JSON, or off the schema
        _report(self.name, ask, len(queries), started, rejected,
                failed if failed >= max_failed and len(queries) < count else 0, judge)
        if sample:
            path = _write_sample(options.sample_file, self.name, sample)
            print(f"{self.name}: a sample of {len(sample)} questions beside their memories in {path}", file=sys.stderr)
        return queries

    def _judge(self) -> Any:
        from recall_kit_llm.judge import LlmJudge

        options = self.options
        judge = LlmJudge(LlmJudge.Options(model=options.judge_model or options.model, allow_remote=options.allow_remote,
                                          tries=options.tries, retries=options.retries,
                                          retry_wait=options.retry_wait, cache=options.cache))
        judge.prepare()
        return judge


def _write_sample(where: str, name: str, rows: list[dict[str, Any]]) -> Path:
    """The sample as JSON lines, readable by the user alone (it holds memory text)."""
    import json

    from recall_kit.plugin import atomic_open
    from recall_kit_llm.models import cache_folder, digest

    path = Path(where) if where else cache_folder() / "samples" / f"{name}-{digest(rows)[:12]}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path, "w", private=True) as handle:
        handle.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return path


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
            question, overlap, answer = found
            queries.append(GeneratedQuery(
                text=question, relevance={unit: 1 for unit in units},
                scope=first.scope, answer=answer,
                provenance={"model": ask.model.model_id, "prompt_version": MULTIHOP_VERSION,
                            "seed_ids": [first.id, second.id], "overlap": round(overlap, 4)},
            ))
        _report(self.name, ask, len(queries), started)
        return queries


def _report(name: str, ask: JsonAsker, kept: int, started: float, rejected: Counter[str] | None = None,
            stopped: int = 0, judge: Any = None) -> None:
    """Two lines on stderr: kept, calls, and why answers were rejected (counts by reason); then what
    the run cost (calls, tokens, seconds)."""
    import sys

    stats = ask.stats
    calls = stats.calls + (judge._asker.stats.calls if judge is not None and judge._asker else 0)
    cached = stats.cached + (judge._asker.stats.cached if judge is not None and judge._asker else 0)
    reasons = ", ".join(f"{reason} {number}" for reason, number in sorted((rejected or Counter()).items()) if number)
    if rejected is None:
        reasons = f"{stats.malformed} (malformed or too close to the memory's words)"
    print(f"{name}: {kept} kept; {calls} model calls, {cached} from the cache; answers rejected: "
          f"{reasons or 'none'}; {stats.skipped} seeds without a usable answer"
          + (f"; stopped after {stopped} seeds gave no question (max_failed_seeds)" if stopped else ""),
          file=sys.stderr)
    print(cost_line(name, ask.cost(time.monotonic() - started), before=False), file=sys.stderr)
