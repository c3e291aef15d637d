"""Content fingerprints: sha256 over canonical JSON, so any edit to a memory changes its corpus's id."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recall_kit.types import Memory


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def fingerprint_memories(memories: Sequence[Memory]) -> str:
    """sha256 over every memory's fields in id order (text included, so any edit changes it)."""
    digest = hashlib.sha256()
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
