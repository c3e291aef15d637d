"""The `llm` relevance judge: a model grades (query, memory) pairs 0-3 under a rubric, as JSON."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recall_kit.plugin import Memory, Query, RelevanceJudge
from recall_kit_llm.models import JsonAsker, ModelOptions, asker, cost_line

JUDGE_VERSION = "judge-2"

# Only the grade is asked for: output tokens are time, and a reason would be thrown away.
RUBRIC = """You judge whether a stored memory answers a search question. Grade it:
0 not relevant: does not help answer the question
1 partly relevant: on topic, or one piece of what is needed
2 relevant: answers the question, or an essential part of it
3 highly relevant: the memory the question is after
Answer with the JSON object {"grade": N} and nothing else."""

GRADE_SCHEMA = {
    "type": "object",
    "properties": {"grade": {"type": "integer", "minimum": 0, "maximum": 3}},
    "required": ["grade"],
}
#: `{"grade": 3}` is about 6 tokens; the cap leaves room for a little whitespace.
GRADE_MAX_TOKENS = 16


def _grade(answer: dict[str, Any]) -> int | None:
    grade = answer.get("grade")
    if isinstance(grade, str) and grade.strip().isdigit():
        grade = int(grade.strip())
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 3:
        return None
    return grade


def _prompt(query: Query, memory: Memory) -> str:
    return f"QUESTION:\n{query.text}\n\nMEMORY:\n{memory.content}\n\nGrade the memory."


class LlmJudge(RelevanceJudge):
    """Grades each pooled pair with a model (0-3, the terminal judge's rubric), cached by content."""

    description = "a model grades each pooled pair 0-3 under the terminal judge's rubric"

    @dataclass(frozen=True)
    class Options(ModelOptions):
        pass

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._asker: JsonAsker | None = None

    def prepare(self) -> None:
        self._asker = asker(self.options, JUDGE_VERSION, GRADE_MAX_TOKENS)

    def _ready(self) -> JsonAsker:
        if self._asker is None:
            self.prepare()
        assert self._asker is not None
        return self._asker

    def grade(self, query: Query, memory: Memory) -> int | None:
        return self._ready().ask(RUBRIC, _prompt(query, memory), GRADE_SCHEMA, _grade)  # type: ignore[no-any-return]

    def grade_many(self, pairs: Sequence[tuple[Query, Memory]]) -> Iterator[int | None]:
        """The grades of `pairs` in order, `concurrency` calls in flight; the cost estimated on
        stderr before the first call and reported after the last."""
        ask, started = self._ready(), time.monotonic()
        prompts = [_prompt(query, memory) for query, memory in pairs]
        print(cost_line("judge", ask.estimate((RUBRIC, prompt, GRADE_SCHEMA) for prompt in prompts), before=True),
              file=sys.stderr)
        yield from ask.ask_many(((RUBRIC, prompt, GRADE_SCHEMA, _grade) for prompt in prompts), "judge", len(prompts))
        print(cost_line("judge", ask.cost(time.monotonic() - started), before=False), file=sys.stderr)

    def provenance(self) -> Mapping[str, Any]:
        model = self._asker.model.model_id if self._asker else self.options.model
        return {"judge": "llm", "judge_model": model, "judge_prompt_version": JUDGE_VERSION}
