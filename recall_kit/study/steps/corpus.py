"""The corpus step: the store's memories as corpus.jsonl, sensitive rows dropped before anything is
written (their ids, never their text, kept in sensitive_ids.txt)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall_kit.errors import DatasetError
from recall_kit.fileio import write_jsonl_atomic
from recall_kit.study.config import StudyConfig, shown_path
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.result import CorpusSummary
from recall_kit.study.steps.common import StepRule, hashes, write_output
from recall_kit.study.validate import check_corpus_rows, no_memories, rows_left_out


@dataclass(frozen=True)
class CorpusReads:
    """[store]: its kind, path, sqlite columns, and the hashes of the files it names."""

    study_file: str
    kind: str
    path: str
    columns: dict[str, str]
    data: dict[str, str | None]


def corpus_reads(config: StudyConfig) -> CorpusReads:
    store = config.store
    files = [store.path / "corpus.jsonl"] if store.kind == "dataset" else [store.path]
    return CorpusReads(config.source.name, store.kind, str(store.path), dict(store.columns), hashes(files))


def make_corpus(reads: CorpusReads, _: Artefacts, folder: Path) -> None:
    """The store's memories as corpus.jsonl; sensitive rows are dropped before anything is written,
    their ids (never their text) kept in sensitive_ids.txt. A flag that cannot be read is no
    "not sensitive": it refuses the store, naming the row, before anything is written."""
    path = Path(reads.path)
    left_out: dict[str, int] = {}
    if reads.kind == "sqlite":
        import recall_kit.registry as registry
        from recall_kit.study.init import importer_options

        importer = registry.importers.create("sqlite", importer_options(reads.columns))
        rows, counts = importer.read_memories(path)
        sensitive, dropped = sorted(importer.sensitive_ids), int(counts["dropped"].get("rows_sensitive", 0))
        left_out = rows_left_out(counts)
    else:
        source = path / "corpus.jsonl" if reads.kind == "dataset" else path
        if not source.is_file():
            raise DatasetError(f"{shown_path(source)}: not found ([store] {reads.kind} in {reads.study_file}).")
        check_corpus_rows(source)  # problems named in the user's file and line, not the copy's
        rows, sensitive, dropped = _readable_rows(source)
    if not rows:
        raise no_memories(path, CorpusSummary(reads.kind, 0, dropped, rows_left_out=left_out))
    write_jsonl_atomic(folder / "corpus.jsonl", rows)
    if sensitive:
        from recall_kit.dataset import SENSITIVE_IDS_FILE

        (folder / SENSITIVE_IDS_FILE).write_text("".join(f"{doc}\n" for doc in sensitive), encoding="utf-8")
    importance = sum(1 for row in rows if row.get("importance") is not None)
    write_output(folder / "corpus.json", CorpusSummary(source=reads.kind, memories=len(rows), sensitive_dropped=dropped,
                                                       importance_share=round(importance / len(rows), 4),
                                                       rows_left_out=left_out))


def _readable_rows(source: Path) -> tuple[list[dict[str, Any]], list[str], int]:
    """A JSONL corpus's rows that are not sensitive, the sensitive rows' ids and how many they are;
    a flag that cannot be read ('maybe', [1]) is a DatasetError naming its line."""
    from recall_kit.dataset import as_id, read_jsonl, sensitive_flag, shown_flag

    rows: list[dict[str, Any]] = []
    sensitive: list[str] = []
    dropped = 0
    for number, row in read_jsonl(source):
        flag = sensitive_flag(row.get("is_sensitive"))
        if flag is None:
            raise DatasetError(f"{source.name}:{number}: is_sensitive {shown_flag(row.get('is_sensitive'))} is not "
                               "true or false; a flag recall-kit cannot read is never taken as \"not sensitive\".")
        if flag:
            dropped += 1
            doc = as_id(row.get("id"))
            if doc is not None:
                sensitive.append(doc)
        else:
            rows.append(row)
    return rows, sorted(set(sensitive)), dropped


RULE = StepRule("corpus", CorpusReads, lambda at, _: corpus_reads(at.config), make_corpus)
