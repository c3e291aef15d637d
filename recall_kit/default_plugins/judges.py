"""The built-in relevance judge (`answer`), registered through the same hook as any plugin's."""

from __future__ import annotations

from recall_kit.hookspecs import Register, hookimpl


@hookimpl
def register_judges(register: Register) -> None:
    from recall_kit.curate.answer import AnswerJudge

    register("answer", AnswerJudge)
