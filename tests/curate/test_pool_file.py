"""A pool file read by `read_pool` (recall-kit judge, recall-kit label --pool): every id an id."""

from __future__ import annotations

from pathlib import Path

import pytest

from recall_kit.curate.judge import read_pool
from recall_kit.errors import DatasetError


@pytest.mark.parametrize(("line", "message"), [
    ('{"query_id": "q", "doc_ids": [""]}', r"pool.jsonl:1: doc_ids holds '', not an id"),
    ('{"query_id": null, "doc_ids": ["a"]}', r"pool.jsonl:1: query_id holds None, not an id"),
    ('{"query_id": "q", "doc_ids": ["a", [1]]}', r"doc_ids holds \[1\], not an id"),
    ('{"query_id": "q", "doc_ids": ["a\\nb"]}', r"doc_ids holds 'a\\nb', not an id"),
])
def test_an_id_that_is_no_id_is_refused_naming_the_line(tmp_path: Path, line: str, message: str) -> None:
    """Issue 72 (fuzzing): such ids were read through str() ("", "None", "[1]")."""
    path = tmp_path / "pool.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=message):
        read_pool(path)


def test_ids_as_text_or_integers_are_read_as_text(tmp_path: Path) -> None:
    path = tmp_path / "pool.jsonl"
    path.write_text('{"query_id": 7, "doc_ids": [1, "b"]}\n', encoding="utf-8")
    assert read_pool(path) == [("7", ["1", "b"])]
