"""The trec importer: SGML, Web-track XML and tsv topics, TREC qrels, JSONL or tsv corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recall_kit.curate.importers import import_dataset
from recall_kit.curate.importers.trec import parse_topics
from recall_kit.dataset import read_dataset
from recall_kit.errors import OptionError

SGML = """<top>
<num> Number: 301
<title> International Organized Crime

<desc> Description:
Identify organizations that
participate in crime.

<narr> Narrative:
A relevant document names one.
</top>

<top>
<num> Number: 302
<title> Poliomyelitis and Post-Polio
<desc> Description: Is the disease coming back?
</top>

<top>
<num> Number: 303
<title> Hubble Telescope
</top>

<top>
<num> Number: 301
<title> a repeated topic number
</top>
"""

QRELS = "301 0 d1 1\n301 0 d2 0\n301 0 d9 1\n302 0 d3 2\n304 0 d1 1\n"


def write_collection(folder: Path, topics: str = SGML, topics_name: str = "topics.301-303.txt") -> Path:
    folder.mkdir(parents=True)
    (folder / topics_name).write_text(topics, encoding="utf-8")
    (folder / "qrels.301-303.txt").write_text(QRELS, encoding="utf-8")
    corpus = [
        {"id": "d1", "contents": "Mafia groups across borders"},
        {"id": "d2", "title": "Polio", "text": "vaccination campaigns"},
        {"docid": "d3", "contents": "post-polio syndrome returns"},
        {"contents": "a document with no id"},
    ]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus), encoding="utf-8")
    return folder


def test_sgml_topics_jsonl_corpus(tmp_path: Path) -> None:
    source = write_collection(tmp_path / "trec")
    counts = import_dataset("trec", source, tmp_path / "out")
    assert counts == {
        "memories": 3,
        "queries": 2,
        "judgments": 3,
        "dropped": {
            "documents_missing_id": 1,
            "judgments_unknown_document": 1,
            "qrels_queries_without_topic": 1,
            "topics_duplicate": 1,
            "topics_without_qrels": 1,
        },
    }
    dataset, problems = read_dataset(tmp_path / "out")
    assert problems == []
    assert {q.query_id: q.text for q in dataset.queries} == {
        "301": "International Organized Crime", "302": "Poliomyelitis and Post-Polio",
    }
    assert dataset.qrels == {"301": {"d1": 1, "d2": 0}, "302": {"d3": 2}}
    assert dataset.corpus.get("d2").content == "Polio\nvaccination campaigns"


def test_field_option_and_explicit_files(tmp_path: Path) -> None:
    source = write_collection(tmp_path / "trec")
    counts = import_dataset("trec", source, tmp_path / "out", {
        "field": "title+description", "topics": "topics.301-303.txt", "qrels": str(source / "qrels.301-303.txt"),
        "corpus": "corpus.jsonl", "stratum": "robust",
    })
    assert counts["queries"] == 2
    dataset, problems = read_dataset(tmp_path / "out")
    assert problems == []
    texts = {q.query_id: q.text for q in dataset.queries}
    assert texts["301"] == "International Organized Crime Identify organizations that participate in crime."
    assert texts["302"] == "Poliomyelitis and Post-Polio Is the disease coming back?"
    assert dataset.strata == ["robust"]


def test_tsv_topics_and_tsv_corpus(tmp_path: Path) -> None:
    source = tmp_path / "trec"
    source.mkdir()
    (source / "topics.tsv").write_text("q1\tevents in clickhouse\nq2\twho leads\nq3\t\n", encoding="utf-8")
    (source / "qrels.txt").write_text("q1 0 7 1\nq2 0 8 1\nq2 0 9 1\nq3 0 7 1\n", encoding="utf-8")
    (source / "collection.tsv").write_text(
        "7\tKestrel stores events in ClickHouse\n8\tPriya\tleads Kestrel\nno tab on this line\n\n9\t   \n",
        encoding="utf-8",
    )
    counts = import_dataset("trec", source, tmp_path / "out")
    assert counts == {
        "memories": 2,
        "queries": 2,
        "judgments": 2,
        "dropped": {"documents_empty": 1, "documents_without_tab": 1, "judgments_unknown_document": 1,
                    "topics_without_text": 1},
    }
    dataset, problems = read_dataset(tmp_path / "out")
    assert problems == []
    assert dataset.corpus.get("8").content == "Priya leads Kestrel"
    assert dataset.qrels == {"q1": {"7": 1}, "q2": {"8": 1}}


def test_ambiguous_files_are_one_clear_error(tmp_path: Path) -> None:
    source = write_collection(tmp_path / "trec")
    (source / "topics.other.txt").write_text("x\ty\n", encoding="utf-8")
    with pytest.raises(OptionError, match=r"Cannot tell which file .* holds the topics "
                                          r"\(found: topics\.301-303\.txt, topics\.other\.txt\); name it with --topics FILE"):
        import_dataset("trec", source, tmp_path / "out")


def test_web_track_xml_topics() -> None:
    xml = """<webtrack2009>
<topic number="1" type="faceted">
  <query>obama family tree</query>
  <description>Find information on President Barack Obama's family history.</description>
</topic>
</webtrack2009>"""
    assert parse_topics(xml, "title") == [("1", "obama family tree")]
    assert parse_topics(xml, "description") == [("1", "Find information on President Barack Obama's family history.")]
