"""Importer for LongMemEval: each question is its own scope over its haystack of sessions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from recall_kit.curate.importers._writer import Counts, as_id, qrels_row, read_json, write_dataset_files
from recall_kit.errors import DatasetError
from recall_kit.types import Importer


def haystack_date(text: Any) -> tuple[str | None, bool]:
    """A haystack date ("2023/05/20 (Sat) 02:21") as ISO 8601; (raw text, False) when unparsed."""
    if not isinstance(text, str) or not text.strip():
        return None, False
    cleaned = " ".join(text.split())
    for pattern in ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M", "%Y/%m/%d"):
        try:
            return datetime.strptime(cleaned, pattern).isoformat(), True
        except ValueError:
            continue
    return cleaned, False


def _turn_text(turn: dict[str, Any]) -> str:
    role = turn.get("role")
    content = turn.get("content")
    text = content if isinstance(content, str) else ""
    return f"{role}: {text}" if isinstance(role, str) and role else text


class LongMemEvalImporter(Importer):
    """LongMemEval (longmemeval_s/_m/_oracle JSON): one scope per question, sessions or turns as memories."""

    description = "LongMemEval JSON: one scope per question; --granularity session or turn"

    @dataclass(frozen=True)
    class Options:
        #: What a memory is: a whole haystack session, or one turn of it.
        granularity: Literal["session", "turn"] = "session"

    def run(self, source: Path, destination: Path) -> dict[str, Any]:
        data = read_json(source)
        if not isinstance(data, list):
            raise DatasetError(f"{source.name}: expected a list of LongMemEval questions")
        counts = Counts()
        memories: list[dict[str, Any]] = []
        queries: list[dict[str, Any]] = []
        qrels: list[dict[str, Any]] = []
        seen_questions: set[str] = set()
        for item in data:
            if not isinstance(item, dict):
                counts.drop("questions_malformed")
                continue
            question_id = as_id(item.get("question_id"))
            if question_id is None or not isinstance(item.get("question"), str):
                counts.drop("questions_malformed")
                continue
            if question_id in seen_questions:
                counts.drop("questions_duplicate_id")
                continue
            if question_id.endswith("_abs"):
                counts.drop("questions_abstention")
                continue
            session_ids = item.get("haystack_session_ids")
            sessions = item.get("haystack_sessions")
            dates = item.get("haystack_dates") or [None] * len(sessions or [])
            if (
                not isinstance(session_ids, list) or not isinstance(sessions, list)
                or not isinstance(dates, list) or not (len(session_ids) == len(sessions) == len(dates))
            ):
                counts.drop("questions_malformed_haystack")
                continue
            seen_questions.add(question_id)
            rows, relevant = self._haystack(question_id, session_ids, sessions, dates, item, counts)
            if not relevant:
                counts.drop("questions_without_evidence")  # and its haystack: no query searches it
                continue
            memories.extend(rows)
            queries.append({
                "query_id": question_id, "text": item["question"],
                "stratum": str(item.get("question_type") or "unknown"), "scope": question_id,
            })
            qrels.append(qrels_row(question_id, dict.fromkeys(relevant, 1)))
        write_dataset_files(destination, memories, queries, qrels)
        return counts.result(
            memories=len(memories), queries=len(queries),
            judgments=sum(len(row["relevant_ids"]) for row in qrels), scopes=len(queries),
        )

    def _haystack(
        self, question_id: str, session_ids: list[Any], sessions: list[Any], dates: list[Any],
        item: dict[str, Any], counts: Counts,
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """The memories of one question's haystack, and the ids of the relevant ones."""
        answers = {as_id(value) for value in item.get("answer_session_ids") or []} - {None}
        by_turn = self.options.granularity == "turn"
        rows: list[dict[str, Any]] = []
        relevant: list[str] = []
        seen: set[str] = set()
        for raw_id, session, raw_date in zip(session_ids, sessions, dates, strict=True):
            session_id = as_id(raw_id)
            if session_id is None or not isinstance(session, list):
                counts.drop("sessions_malformed")
                continue
            if session_id in seen:
                counts.drop("sessions_duplicate_in_haystack")
                continue
            seen.add(session_id)
            created_at, parsed = haystack_date(raw_date)
            if created_at is not None and not parsed:
                counts.note("dates_kept_as_text")
            turns = [turn for turn in session if isinstance(turn, dict)]
            if len(turns) != len(session):
                counts.drop("turns_malformed", len(session) - len(turns))
            base = {"scope": question_id, **({"created_at": created_at} if created_at else {})}
            if by_turn:
                for index, turn in enumerate(turns, start=1):
                    memory_id = f"{question_id}:{session_id}:{index}"
                    rows.append({"id": memory_id, "content": _turn_text(turn), **base,
                                 "session": session_id})
                    if turn.get("has_answer") is True:
                        relevant.append(memory_id)
            else:
                memory_id = f"{question_id}:{session_id}"
                rows.append({"id": memory_id, "content": "\n".join(_turn_text(t) for t in turns), **base})
                if session_id in answers:
                    relevant.append(memory_id)
        missing = answers - seen
        if missing:
            counts.drop("answer_sessions_not_in_haystack", len(missing))
        return rows, relevant
