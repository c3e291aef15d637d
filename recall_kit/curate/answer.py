"""The `answer` judge: DPR's "has answer" rule (Karpukhin et al., EMNLP 2020, as its evaluation
scores a passage), loosened to a share of the answer's content words: a memory is relevant to a
query when it holds at least `min_share` of the words of the answer the query was written for."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recall_kit.curate.text import content_words, words
from recall_kit.errors import OptionError, PluginRunError
from recall_kit.types import Memory, Query, RelevanceJudge


def answer_overlap(answer: str | None, text: str) -> float | None:
    """The share of `answer`'s content words (lowercase, stopwords out; its plain words when it
    has only stopwords) that `text` contains as words; None when there is no answer to look for.
    1.0 is DPR's has-answer rule on words; 0.5, half of them."""
    if not answer:
        return None
    wanted = content_words(answer) or set(words(answer))
    if not wanted:
        return None
    return len(wanted & set(words(text))) / len(wanted)


class AnswerJudge(RelevanceJudge):
    """Relevant (grade 2) when a memory holds `min_share` of the answer's content words, highly
    relevant (3) when it holds every one, not relevant (0) otherwise. Needs queries with an
    `answer` (LoCoMo's; generated queries'); a query without one is left ungraded."""

    description = "DPR's has-answer rule: a memory holding the query's answer words (no model)"

    @dataclass(frozen=True)
    class Options:
        #: The share of the answer's content words a memory must hold to be relevant.
        min_share: float = 0.5

    def prepare(self) -> None:
        if not 0 < self.options.min_share <= 1:
            raise OptionError(f"answer.min_share must lie in (0, 1], got {self.options.min_share}.")

    def grade(self, query: Query, memory: Memory) -> int | None:
        share = answer_overlap(query.answer, memory.content)
        if share is None:
            return None
        if share >= 1.0:
            return 3
        return 2 if share >= self.options.min_share else 0

    def grade_many(self, pairs: Sequence[tuple[Query, Memory]]) -> Iterator[int | None]:
        if pairs and not any(query.answer for query, _ in pairs):
            raise PluginRunError(f"The answer judge needs queries with an \"answer\" field; none of the "
                                 f"{len(pairs)} pairs' queries has one (queries.jsonl).")
        for query, memory in pairs:
            yield self.grade(query, memory)

    def provenance(self) -> Mapping[str, Any]:
        return {"judge": "answer", "judge_min_share": self.options.min_share}
