"""Content fingerprints: sha256 over canonical JSON (a corpus's is `recall_kit.types.fingerprint_memories`)."""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
