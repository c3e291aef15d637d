"""Importer for LoCoMo (locomo10.json): each conversation a scope, each turn a memory."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from recall_kit.curate.importers._writer import Counts, as_id, qrels_row, read_json, write_dataset_files
from recall_kit.errors import DatasetError
from recall_kit.types import Importer

#: LoCoMo's question categories, as its paper and evaluation code number them.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"^D(\d+):(\d+)$")
_SEPARATORS = re.compile(r"[;,\s]+")


def session_date(text: Any) -> tuple[str | None, bool]:
    """A session's `date_time` ("1:56 pm on 8 May, 2023") as ISO 8601; (raw text, False) when unparsed."""
    if not isinstance(text, str) or not text.strip():
        return None, False
    cleaned = " ".join(text.split())
    for pattern in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(cleaned, pattern).isoformat(), True
        except ValueError:
            continue
    return cleaned, False


def evidence_tokens(evidence: Any) -> list[str]:
    """Every id-like token in a question's evidence: a list of strings, each possibly holding
    several ids separated by ';', ',' or spaces."""
    items = evidence if isinstance(evidence, list) else [evidence]
    tokens: list[str] = []
    for item in items:
        if isinstance(item, str):
            tokens.extend(token for token in _SEPARATORS.split(item) if token)
        elif item is not None:
            tokens.append(str(item))
    return tokens


class LocomoImporter(Importer):
    """LoCoMo's locomo10.json: turns become scoped memories, evidence-backed questions become queries."""

    description = "LoCoMo (locomo10.json): turns as memories per conversation, QA evidence as qrels"

    @dataclass(frozen=True)
    class Options:
        #: Append a shared image's caption to its turn's text ("[image: a dog on a beach]").
        captions: bool = True
        #: Keep category-5 (adversarial) questions; their evidence points at turns like the others.
        adversarial: bool = True

    def run(self, source: Path, destination: Path) -> dict[str, Any]:
        data = read_json(source)
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list):
            raise DatasetError(f"{source.name}: expected a list of LoCoMo samples")
        counts = Counts()
        memories: list[dict[str, Any]] = []
        queries: list[dict[str, Any]] = []
        qrels: list[dict[str, Any]] = []
        scopes: set[str] = set()
        dates_unparsed = 0
        for position, sample in enumerate(data, start=1):
            if not isinstance(sample, dict):
                counts.drop("samples_malformed")
                continue
            given = sample.get("sample_id")
            sample_id = as_id(given)
            if sample_id is None and given is not None:  # was silently renamed sample<N>
                raise DatasetError(f"{source.name}: sample {position}: sample_id must be one line of text "
                                   f"or an integer, got {type(given).__name__}")
            if sample_id is None:
                sample_id = f"sample{position}"
                counts.note("samples_without_id_named_by_position")
            if sample_id in scopes:
                counts.drop("samples_duplicate_id")
                continue
            conversation = sample.get("conversation")
            if not isinstance(conversation, dict):
                counts.drop("samples_without_conversation")
                continue
            scopes.add(sample_id)
            turns: set[str] = set()
            for session_number, session_key in sorted(
                (int(m.group(1)), key) for key in conversation if (m := _SESSION_KEY.match(key))
            ):
                created_at, parsed = session_date(conversation.get(f"{session_key}_date_time"))
                if created_at is not None and not parsed:
                    dates_unparsed += 1
                session = conversation[session_key]
                if not isinstance(session, list):
                    counts.drop("sessions_malformed")
                    continue
                for turn in session:
                    memory = self._memory(sample_id, session_number, created_at, turn, turns, counts)
                    if memory is not None:
                        memories.append(memory)
            questions = sample.get("qa") or []
            if not isinstance(questions, list):
                counts.drop("samples_malformed_qa")
                continue
            for index, question in enumerate(questions, start=1):
                self._question(sample_id, index, question, turns, queries, qrels, counts)
        write_dataset_files(destination, memories, queries, qrels)
        if dates_unparsed:
            counts.note("session_dates_kept_as_text", dates_unparsed)
        return counts.result(
            memories=len(memories), queries=len(queries),
            judgments=sum(len(row["relevant_ids"]) for row in qrels), scopes=len(scopes),
        )

    def _memory(
        self, sample_id: str, session: int, created_at: str | None, turn: Any,
        turns: set[str], counts: Counts,
    ) -> dict[str, Any] | None:
        if not isinstance(turn, dict):
            counts.drop("turns_malformed")
            return None
        dia_id = turn.get("dia_id")
        text = turn.get("text")
        if not isinstance(dia_id, str) or not _DIA_ID.match(dia_id.strip()):
            counts.drop("turns_bad_dia_id")
            return None
        dia_id = dia_id.strip()
        if dia_id in turns:
            counts.drop("turns_duplicate_dia_id")
            return None
        if not isinstance(text, str):
            counts.drop("turns_missing_text")
            return None
        speaker = turn.get("speaker")
        content = f"{speaker}: {text}" if isinstance(speaker, str) and speaker else text
        caption = turn.get("blip_caption")
        if self.options.captions and isinstance(caption, str) and caption.strip():
            content += f" [image: {caption.strip()}]"
        turns.add(dia_id)
        memory: dict[str, Any] = {"id": f"{sample_id}:{dia_id}", "content": content, "scope": sample_id}
        if created_at is not None:
            memory["created_at"] = created_at
        memory["session"] = session
        return memory

    def _question(
        self, sample_id: str, index: int, question: Any, turns: set[str],
        queries: list[dict[str, Any]], qrels: list[dict[str, Any]], counts: Counts,
    ) -> None:
        if not isinstance(question, dict) or not isinstance(question.get("question"), str):
            counts.drop("questions_malformed")
            return
        category = question.get("category")
        if str(category) == "5" and not self.options.adversarial:
            counts.drop("questions_adversarial_skipped")
            return
        relevant: list[str] = []
        for token in evidence_tokens(question.get("evidence")):
            token = token.strip().rstrip(".")
            if not _DIA_ID.match(token):
                counts.drop("evidence_malformed")
            elif token not in turns:
                counts.drop("evidence_unresolved")
            elif f"{sample_id}:{token}" in relevant:
                counts.drop("evidence_duplicate")
            else:
                relevant.append(f"{sample_id}:{token}")
        if not relevant:
            counts.drop("questions_without_resolvable_evidence")
            return
        number = str(category).strip() if isinstance(category, (int, str)) else ""
        stratum = CATEGORIES.get(int(number)) if number.isdigit() else None
        if stratum is None:
            counts.note("questions_unknown_category")
            stratum = "unknown"
        query_id = f"{sample_id}:q{index}"
        row = {"query_id": query_id, "text": question["question"], "stratum": stratum, "scope": sample_id}
        answer = question.get("answer")  # adversarial (category 5) questions have none
        if isinstance(answer, (str, int, float)) and not isinstance(answer, bool) and str(answer).strip():
            row["answer"] = str(answer).strip()
        queries.append(row)
        qrels.append(qrels_row(query_id, dict.fromkeys(relevant, 1)))
