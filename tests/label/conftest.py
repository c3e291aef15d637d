"""What the label tests share: a pool of the example store's pairs (tests/label/test_session.py,
test_server.py, test_label.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

#: A memory the example corpus flags is_sensitive: in the pool, never offered.
SENSITIVE = "152"


@pytest.fixture()
def pool(tmp_path: Path) -> Path:
    """Two queries' pairs of examples/memories: a sensitive memory and an id the corpus lacks among them."""
    path = tmp_path / "pool.jsonl"
    rows = [{"query_id": "exact_001", "doc_ids": [SENSITIVE, "10", "11"]},
            {"query_id": "exact_002", "doc_ids": ["12", "no-such-id", "13"]}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
