"""Content fingerprints: sha256 over canonical JSON, so any edit to a memory changes its corpus's id."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recall_kit.types import Memory


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def fingerprint_memories(memories: Sequence[Memory], context: Mapping[str, Any] | None = None) -> str:
    """sha256 over every memory's fields in id order (text included, so any edit changes it), and
    over the context expansion the content went through, when there was one."""
    digest = hashlib.sha256()
    if context:
        digest.update(canonical_json(["context", dict(sorted(context.items()))]))
    for memory in sorted(memories, key=lambda m: m.id):
        digest.update(
            canonical_json(
                [
                    memory.id, memory.content, memory.category, list(memory.tags),
                    memory.expanded_keywords, memory.importance, memory.scope, memory.parent_id,
                    memory.created_at,
                ]
            )
        )
    return digest.hexdigest()
