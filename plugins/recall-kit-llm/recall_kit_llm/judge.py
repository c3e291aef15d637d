"""The `llm` relevance judge: a model grades (query, memory) pairs 0-3 under a rubric, as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from recall_kit.plugin import Memory, Query, RelevanceJudge
from recall_kit_llm.generators import ModelOptions, asker
from recall_kit_llm.models import JsonAsker

JUDGE_VERSION = "judge-1"

RUBRIC = """You judge whether a stored memory answers a search question. Grade it:
0 not relevant: does not help answer the question
1 partly relevant: on topic, or one piece of what is needed
2 relevant: answers the question, or an essential part of it
3 highly relevant: the memory the question is after"""

GRADE_SCHEMA = {
    "type": "object",
    "properties": {"grade": {"type": "integer", "minimum": 0, "maximum": 3}, "reason": {"type": "string"}},
    "required": ["grade"],
}


def _grade(answer: dict[str, Any]) -> int | None:
    grade = answer.get("grade")
    if isinstance(grade, str) and grade.strip().isdigit():
        grade = int(grade.strip())
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 3:
        return None
    return grade


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
        self._asker = asker(self.options, JUDGE_VERSION)

    def grade(self, query: Query, memory: Memory) -> int | None:
        if self._asker is None:
            self.prepare()
        assert self._asker is not None
        prompt = f"QUESTION:\n{query.text}\n\nMEMORY:\n{memory.content}\n\nGrade the memory."
        return self._asker.ask(RUBRIC, prompt, GRADE_SCHEMA, _grade)  # type: ignore[no-any-return]

    def provenance(self) -> Mapping[str, Any]:
        model = self._asker.model.model_id if self._asker else self.options.model
        return {"judge": "llm", "judge_model": model, "judge_prompt_version": JUDGE_VERSION}
