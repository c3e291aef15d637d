"""The `llm` extractor for the graph retriever: typed relations (who did what, where, when, with
whom) extracted by a model under a JSON schema, one call per memory, cached by the memory's
content hash. Options come through the graph's `extractor_options` (model:NAME,allow_remote:true)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

from recall_kit_graph import Extractor, Mention, Relation

from recall_kit.plugin import Corpus, OptionError
from recall_kit_llm.models import JsonAsker, ModelOptions, asker, cost_line, digest

EXTRACT_VERSION = "extract-1"
#: Output-token cap of one memory's relations (a few dozen triples).
EXTRACT_MAX_TOKENS = 1000
RELATION_TYPES = ("did", "located_in", "happened_on", "with", "works_at", "works_on", "uses", "part_of",
                  "related_to")

EXTRACT_SYSTEM = (
    "You extract a knowledge graph from one memory: who did what, where, when and with whom. "
    "List the relations the memory states, each as head, relation, tail; heads and tails are "
    "short names (people, places, organisations, projects, events, dates) as the memory writes them. "
    f"Relation types: {', '.join(RELATION_TYPES)}. Return an empty list when it states none."
)
RELATIONS_SCHEMA = {
    "type": "object",
    "properties": {"relations": {"type": "array", "items": {
        "type": "object",
        "properties": {"head": {"type": "string"}, "relation": {"type": "string", "enum": list(RELATION_TYPES)},
                       "tail": {"type": "string"}},
        "required": ["head", "relation", "tail"]}}},
    "required": ["relations"],
}


def _relations(answer: dict[str, Any]) -> list[tuple[str, str, str]] | None:
    items = answer.get("relations")
    if not isinstance(items, list):
        return None
    found = []
    for item in items:
        if not isinstance(item, dict):
            return None
        head, relation, tail = (item.get(key) for key in ("head", "relation", "tail"))
        if not (isinstance(head, str) and isinstance(relation, str) and isinstance(tail, str)
                and head.strip() and relation.strip() and tail.strip()):
            return None
        if relation not in RELATION_TYPES:
            relation = "related_to"
        found.append((" ".join(head.split()), relation, " ".join(tail.split())))
    return found


def model_options(graph_options: Any) -> ModelOptions:
    """The model options from the graph's `extractor_options` (`model:NAME,allow_remote:true`)."""
    raw = dict(getattr(graph_options, "extractor_options", None) or {})
    if not raw.get("model"):
        raise OptionError("The 'llm' extractor needs a model: -o graph.extractor_options=model:NAME "
                          "(an `llm` model name; add ,allow_remote:true for a remote one).")
    try:
        return ModelOptions(
            model=str(raw["model"]),
            allow_remote=str(raw.get("allow_remote", "false")).lower() in {"1", "true", "yes"},
            tries=int(raw.get("tries", 3)), retries=int(raw.get("retries", 4)),
            retry_wait=float(raw.get("retry_wait", 1.0)),
            concurrency=int(raw["concurrency"]) if raw.get("concurrency") else None,
        )
    except ValueError as error:
        raise OptionError(f"graph.extractor_options: {error}") from None


class LlmExtractor(Extractor):
    """Typed relations extracted by a model under a JSON schema, cached per memory content."""

    description = "Typed relations (who, what, where, when, with whom) from an `llm` model."

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._options = model_options(options)
        self._asker: JsonAsker | None = None

    def cache_key(self) -> str:
        return f"{EXTRACT_VERSION}:{self._options.model}"

    def extract(self, corpus: Corpus) -> Iterator[Mention | Relation]:
        started = time.monotonic()
        ask = asker(self._options, EXTRACT_VERSION, EXTRACT_MAX_TOKENS)
        memories = list(corpus)
        # The asker's cache is keyed by the prompt, i.e. the memory's content: a memory whose
        # text did not change is never sent again. Answers come back in corpus order.
        jobs = [(EXTRACT_SYSTEM, f"MEMORY:\n{memory.content}\n\nExtract the relations.", RELATIONS_SCHEMA, _relations)
                for memory in memories]
        print(cost_line("llm extractor", ask.estimate(job[:3] for job in jobs), before=True), file=sys.stderr)
        for memory, found in zip(memories, ask.ask_many(jobs, "llm extractor", len(jobs)), strict=True):
            for head, relation, tail in found or ():
                yield Mention(memory.id, head, "mentions", "relation")
                yield Mention(memory.id, tail, "mentions", "relation")
                yield Relation(head, relation, tail, memory.id)
        print(f"llm extractor: {len(corpus)} memories; {ask.stats.calls} model calls, {ask.stats.cached} cached, "
              f"{ask.stats.skipped} skipped (no usable answer)", file=sys.stderr)
        print(cost_line("llm extractor", ask.cost(time.monotonic() - started), before=False), file=sys.stderr)


__all__ = ["LlmExtractor", "digest"]
