"""Context expansion at index time: each memory indexed together with its neighbours in the same
session or parent, for any leg (the host hands the leg an expanded corpus; ids do not change)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from recall_kit.errors import DatasetError, OptionError
from recall_kit.options import build_options, options_to_dict
from recall_kit.types import Corpus, Memory

#: The key prefix that marks a leg option as the host's context option: `-o bm25.context.window=2`
#: reaches here as {"bm25": {"context.window": "2"}}; TOML `[options.bm25.context]` as a table.
PREFIX = "context."


@dataclass(frozen=True)
class ContextOptions:
    """How a leg's memories are expanded before the leg indexes them.

    A memory's indexed text becomes its own content repeated `weight` times, then the content of
    up to `window` neighbours on each side in its group, nearest first (-1, +1, -2, +2, ...), so a
    model that truncates long inputs drops the farthest neighbours first.
    """

    #: Neighbours on each side (0: no expansion).
    window: int = 0
    #: How many times the memory's own text is repeated (its weight against the neighbours').
    weight: int = 1
    #: What makes a group: auto (`session` when memories carry one, else `parent_id`), session,
    #: parent, or scope (the whole scope, or the corpus when it has no scopes, as one sequence).
    by: Literal["auto", "session", "parent", "scope"] = "auto"
    #: The order inside a group: corpus (the file's order) or created_at (stable: ties keep file order).
    order: Literal["corpus", "created_at"] = "corpus"
    #: Put the memory's `created_at` (a LoCoMo session date) in its indexed text.
    date: bool = False

    def __post_init__(self) -> None:
        if self.window < 0:
            raise ValueError("window must be >= 0")
        if self.weight < 1:
            raise ValueError("weight must be >= 1")

    @property
    def active(self) -> bool:
        return self.window > 0 or self.weight > 1 or self.date


def split_leg_options(owner: str, raw: Mapping[str, Any]) -> tuple[dict[str, Any], ContextOptions | None]:
    """A leg's raw options split into (the plugin's own, the host's context options or None)."""
    plugin: dict[str, Any] = {}
    context: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "context" and isinstance(value, Mapping):
            context.update(value)
        elif key.startswith(PREFIX):
            context[key[len(PREFIX):]] = value
        else:
            plugin[key] = value
    if not context:
        return plugin, None
    options = build_options(f"context of leg {owner!r}", ContextOptions, context)
    return plugin, options if options.active else None


def describe(options: ContextOptions | None) -> dict[str, Any] | None:
    """The options as plain values for results, manifests and cache keys (None: no expansion)."""
    return options_to_dict(options) if options is not None else None


def _group_keys(corpus: Corpus, options: ContextOptions, leg: str) -> list[Any]:
    by = options.by
    if by == "auto":
        if any("session" in memory.extra for memory in corpus):
            by = "session"
        elif any(memory.parent_id is not None for memory in corpus):
            by = "parent"
        else:
            raise DatasetError(
                f"Context expansion for leg {leg!r} needs neighbours, but no memory carries a "
                "\"session\" or \"parent_id\"; set "
                f"{leg}.context.by=scope to use the whole scope in corpus or created_at order."
            )
    if by == "session":
        if not any("session" in memory.extra for memory in corpus):
            raise DatasetError(f"Context expansion for leg {leg!r}: by=session, but no memory has a \"session\" field.")
        return [(m.scope, str(m.extra["session"])) if "session" in m.extra else (m.scope, None, m.id)
                for m in corpus]
    if by == "parent":
        if not any(memory.parent_id is not None for memory in corpus):
            raise DatasetError(f"Context expansion for leg {leg!r}: by=parent, but no memory has a \"parent_id\".")
        return [(m.scope, m.parent_id) if m.parent_id is not None else (m.scope, None, m.id) for m in corpus]
    return [(memory.scope,) for memory in corpus]


def expand_corpus(corpus: Corpus, options: ContextOptions | None, leg: str) -> Corpus:
    """`corpus` with each memory's content replaced by its expanded text; same ids, same order.

    Raises DatasetError (one line) when the corpus has nothing to group or order by.
    """
    if options is None or not options.active:
        return corpus
    if options.date and not any(memory.created_at for memory in corpus):
        raise DatasetError(f"Context expansion for leg {leg!r}: date=true, but no memory has \"created_at\".")
    groups: dict[Any, list[int]] = {}
    if options.window > 0:
        for index, key in enumerate(_group_keys(corpus, options, leg)):
            groups.setdefault(key, []).append(index)
    if options.order == "created_at" and options.window > 0:
        missing = next((m.id for m in corpus if not m.created_at), None)
        if missing is not None:
            raise DatasetError(
                f"Context expansion for leg {leg!r}: order=created_at, but memory {missing!r} has no \"created_at\"."
            )
        for key, members in groups.items():
            groups[key] = sorted(members, key=lambda i: str(corpus[i].created_at))
    neighbours: dict[int, list[int]] = {}
    for members in groups.values():
        for position, index in enumerate(members):
            near: list[int] = []
            for distance in range(1, options.window + 1):
                if position - distance >= 0:
                    near.append(members[position - distance])
                if position + distance < len(members):
                    near.append(members[position + distance])
            neighbours[index] = near
    expanded: list[Memory] = []
    for index, memory in enumerate(corpus):
        parts = [memory.content] * options.weight
        parts.extend(corpus[other].content for other in neighbours.get(index, []))
        if options.date and memory.created_at:
            parts.append(_readable_date(memory.created_at))
        expanded.append(dataclasses.replace(memory, content="\n".join(parts)))
    return Corpus(expanded, context=describe(options))


def _readable_date(value: str) -> str:
    """An ISO date as words a query may use ("2023-05-08T13:56" -> "8 May 2023"); other text as is."""
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    return f"{moment.day} {moment.strftime('%B')} {moment.year}"


def check_context_keys(owner: str, raw: Mapping[str, Any]) -> None:
    """Reject context options given to something that is not a leg (a fusion)."""
    if any(key == "context" or key.startswith(PREFIX) for key in raw):
        raise OptionError(f"Context options belong to legs; {owner!r} is a fusion.")


__all__ = ["ContextOptions", "describe", "expand_corpus", "split_leg_options"]
