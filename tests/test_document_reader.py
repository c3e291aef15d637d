"""recall_kit/document_reader.py: a JSON document read field by field, each fault one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recall_kit.document_reader import DocumentReader, read_saved, shown
from recall_kit.errors import ResultFileError


def test_each_fault_names_the_file_the_field_and_the_schema():
    read = DocumentReader("r.json", "example/1")
    data = {"n": 3, "name": "x", "ids": ["a", 1], "big": 10 ** 60, "nested": {"k": -1.5}}
    assert read.count(data, "n") == 3 and read.string(data, "name") == "x"
    with pytest.raises(ResultFileError, match=r"^r.json: missing 'gone'; not a valid example/1 document.$"):
        read.string(data, "gone")
    with pytest.raises(ResultFileError, match=r"^r.json: ids holds a non-string; not a valid example/1 document.$"):
        read.strings(data, "ids")
    with pytest.raises(ResultFileError, match=r"nested.k is -1.5, below 0"):
        read.non_negative(read.number(data["nested"], "k", "nested.k"), "nested.k")
    with pytest.raises(ResultFileError, match=r"name is 'x', not a finite number"):
        read.number(data, "name")
    assert read.optional_mapping(data, "absent") is None and read.optional_sequence(data, "absent") == []
    assert read.optional_count({"n": None}, "n") is None


def test_a_long_value_is_shown_by_its_length():
    assert shown(7) == "7"
    assert shown(10 ** 60) == "a int of 61 characters"


def test_a_saved_document_is_read_through_its_parser_or_refused_in_one_line(tmp_path: Path):
    path = tmp_path / "saved.json"
    path.write_text(json.dumps({"value": 2}), encoding="utf-8")
    assert read_saved(path, lambda data: data["value"] * 2) == 4
    with pytest.raises(ResultFileError, match=r"saved.json: not a readable saved document \(KeyError: 'other'\)"):
        read_saved(path, lambda data: data["other"])
    with pytest.raises(ResultFileError, match=r"missing.json: not a readable saved document \(FileNotFoundError"):
        read_saved(tmp_path / "missing.json", dict)
