"""Importer for a TREC collection: topics (SGML or tsv), qrels, and a corpus (JSONL or tsv)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from recall_kit.curate.importers._writer import (
    Counts,
    as_id,
    one_line,
    qrels_row,
    write_dataset_files,
)
from recall_kit.dataset import read_jsonl
from recall_kit.errors import DatasetError, OptionError
from recall_kit.types import Importer

_TOP = re.compile(r"<top>(.*?)</top>", re.DOTALL | re.IGNORECASE)
_TOPIC_XML = re.compile(r"<topic\b([^>]*)>(.*?)</topic>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<(/?)([a-z]+)\b[^>]*>", re.IGNORECASE)
_PREFIXES = {
    "num": re.compile(r"^\s*number\s*:\s*", re.IGNORECASE),
    "title": re.compile(r"^\s*topic\s*:\s*", re.IGNORECASE),
    "desc": re.compile(r"^\s*description\s*:\s*", re.IGNORECASE),
    "narr": re.compile(r"^\s*narrative\s*:\s*", re.IGNORECASE),
}
_ID_KEYS = ("id", "_id", "docid", "doc_id", "docno")
_TEXT_KEYS = ("contents", "text", "content", "body")


def _fields(block: str) -> dict[str, str]:
    """The text after each tag of a topic, up to the next tag (TREC topics rarely close their tags)."""
    found: dict[str, str] = {}
    tags = list(_TAG.finditer(block))
    for position, match in enumerate(tags):
        if match.group(1):  # a closing tag
            continue
        name = match.group(2).lower()
        end = tags[position + 1].start() if position + 1 < len(tags) else len(block)
        text = block[match.end():end]
        if name in _PREFIXES:
            text = _PREFIXES[name].sub("", text.strip())
        found.setdefault(name, one_line(text))
    return found


def _unclosed_top(text: str) -> str | None:
    """The body of a final `<top>` that has no `</top>`, or None."""
    closed = list(_TOP.finditer(text))
    rest = text[closed[-1].end():] if closed else text
    opening = re.search(r"<top>", rest, re.IGNORECASE)
    return rest[opening.end():] if opening else None


def parse_topics(text: str, field: str) -> list[tuple[str, str]]:
    """(topic id, query text) pairs from SGML topics (`<top><num> Number: 301 <title> ...`),
    TREC Web track XML (`<topic number="1"><query>...`), or `qid<TAB>text` lines."""
    parts = field.split("+")
    topics: list[tuple[str, str]] = []
    blocks = _TOP.findall(text)
    tail = _unclosed_top(text)
    if tail is not None:  # a last <top> never closed (a truncated file): read, and counted by run()
        blocks.append(tail)
    if blocks:
        names = {"title": "title", "description": "desc", "narrative": "narr"}
        for block in blocks:
            found = _fields(block)
            topic_id = found.get("num", "").split()[0] if found.get("num", "").split() else ""
            topics.append((topic_id, " ".join(found.get(names[p], "") for p in parts if found.get(names[p]))))
        return topics
    xml = _TOPIC_XML.findall(text)
    if xml:
        names = {"title": "query", "description": "description", "narrative": "narrative"}
        for attributes, body in xml:
            number = re.search(r'number\s*=\s*"([^"]*)"', attributes)
            found = _fields(body)
            topics.append((number.group(1).strip() if number else "",
                           " ".join(found.get(names[p], "") for p in parts if found.get(names[p]))))
        return topics
    for line in text.splitlines():
        if not line.strip():
            continue
        topic_id, _, query = line.partition("\t") if "\t" in line else line.strip().partition(" ")
        topics.append((topic_id.strip(), one_line(query)))
    return topics


class TrecImporter(Importer):
    """A TREC collection folder: topics, qrels and a corpus file."""

    description = "TREC topics (SGML, Web XML or tsv) + qrels + corpus (JSONL or docid<TAB>text)"

    @dataclass(frozen=True)
    class Options:
        #: Topics file, relative to the source folder (empty: the one file named topics*).
        topics: str = ""
        #: Qrels file, `qid iter docid rel` (empty: the one file named qrels*).
        qrels: str = ""
        #: Corpus file, .jsonl ({"id", "contents"|"text", "title"?}) or tsv (docid<TAB>text)
        #: (empty: corpus.jsonl, corpus.tsv or collection.tsv).
        corpus: str = ""
        #: Which part of an SGML/XML topic is the query text.
        field: Literal["title", "description", "title+description"] = "title"
        #: Stratum given to every query.
        stratum: str = "all"

    def run(self, source: Path, destination: Path) -> dict[str, Any]:
        if not source.is_dir():
            raise DatasetError(f"{source}: the trec importer reads a folder (topics, qrels, corpus)")
        counts = Counts()
        corpus_path = self._find(source, self.options.corpus, "corpus",
                                 ["corpus.jsonl", "corpus.tsv", "collection.tsv", "docs.jsonl", "docs.tsv"])
        topics_path = self._find(source, self.options.topics, "topics", sorted(p.name for p in source.glob("topics*")))
        qrels_path = self._find(source, self.options.qrels, "qrels", sorted(p.name for p in source.glob("qrels*")))

        memories = self._corpus(corpus_path, counts)
        documents = {memory["id"] for memory in memories}
        from recall_kit.measure.score.trec import read_qrels

        judgments = read_qrels(qrels_path)
        try:
            raw_topics = parse_topics(topics_path.read_text(encoding="utf-8"), self.options.field)
        except UnicodeDecodeError:
            raise DatasetError(f"{topics_path.name}: not UTF-8 text") from None
        if _unclosed_top(topics_path.read_text(encoding="utf-8")) is not None:
            counts.note("topics_unclosed_last_block_read")
        queries: list[dict[str, Any]] = []
        qrels: list[dict[str, Any]] = []
        seen: set[str] = set()
        for topic_id, text in raw_topics:
            if not topic_id:
                counts.drop("topics_without_number")
                continue
            if topic_id in seen:
                counts.drop("topics_duplicate")
                continue
            seen.add(topic_id)
            if not text:
                counts.drop("topics_without_text")
                continue
            if topic_id not in judgments:
                counts.drop("topics_without_qrels")
                continue
            known = {doc: grade for doc, grade in judgments[topic_id].items() if doc in documents}
            counts.drop("judgments_unknown_document", len(judgments[topic_id]) - len(known))
            if not known:
                counts.drop("topics_without_known_documents")
                continue
            queries.append({"query_id": topic_id, "text": text, "stratum": self.options.stratum})
            qrels.append(qrels_row(topic_id, known, graded=any(g != 1 for g in known.values())))
        counts.drop("qrels_queries_without_topic", len(set(judgments) - seen))
        write_dataset_files(destination, memories, queries, qrels)
        return counts.result(
            memories=len(memories), queries=len(queries),
            judgments=sum(len(row.get("relevance") or row.get("relevant_ids") or ()) for row in qrels),
        )

    @staticmethod
    def _find(source: Path, given: str, what: str, candidates: list[str]) -> Path:
        if given:
            path = Path(given) if Path(given).is_absolute() else source / given
            if not path.is_file():
                raise DatasetError(f"{path}: not found (the {what} file)")
            return path
        present = [source / name for name in candidates if (source / name).is_file()]
        if len(present) != 1:
            found = ", ".join(p.name for p in present) or "none"
            raise OptionError(
                f"Cannot tell which file in {source} holds the {what} (found: {found}); "
                f"name it with --{what} FILE."
            )
        return present[0]

    def _corpus(self, path: Path, counts: Counts) -> list[dict[str, Any]]:
        memories: list[dict[str, Any]] = []
        seen: set[str] = set()

        def add(doc_id: str | None, text: str | None) -> None:
            if doc_id is None:
                counts.drop("documents_missing_id")
            elif doc_id in seen:
                counts.drop("documents_duplicate_id")
            elif not text or not text.strip():
                counts.drop("documents_empty")
            else:
                seen.add(doc_id)
                memories.append({"id": doc_id, "content": text})

        if path.suffix.lower() in (".jsonl", ".json"):
            for _, row in read_jsonl(path):
                doc_id = next((as_id(row[key]) for key in _ID_KEYS if key in row), None)
                text: str = next((row[key] for key in _TEXT_KEYS if isinstance(row.get(key), str)), "")
                title: str = row["title"] if isinstance(row.get("title"), str) else ""
                add(doc_id, "\n".join(part for part in (title, text) if part.strip()))
            return memories
        try:
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    if not line.strip():
                        continue
                    doc_id, tab, text = line.rstrip("\n").partition("\t")
                    if not tab:
                        counts.drop("documents_without_tab")
                        continue
                    add(as_id(doc_id), text.replace("\t", " "))
        except UnicodeDecodeError:
            raise DatasetError(f"{path.name}: not UTF-8 text") from None
        return memories
