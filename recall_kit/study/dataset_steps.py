"""The study's dataset steps: corpus (the store, sensitive rows dropped), evaluation-set (the user's
queries and qrels, or none, and the queries generated from the corpus alone) and lint. Each make
function receives its step's declared reads (study/reads.py) and the artefacts it needs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from recall_kit.errors import DatasetError
from recall_kit.fileio import write_json_atomic, write_jsonl_atomic
from recall_kit.study.config import shown_path
from recall_kit.study.outputs import write_output
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.reads import CorpusReads, EvaluationSetReads, LintReads
from recall_kit.study.result import CorpusSummary
from recall_kit.study.validate import check_copied_queries, check_corpus_rows, check_generated


def read_rows(path: Path) -> list[dict[str, Any]]:
    """A JSONL file's rows."""
    from recall_kit.dataset import read_jsonl

    return [row for _, row in read_jsonl(path)]


# -- corpus ---------------------------------------------------------------------------------------


def make_corpus(reads: CorpusReads, _: Artefacts, folder: Path) -> None:
    """The store's memories as corpus.jsonl; sensitive rows are dropped before anything is written,
    their ids (never their text) kept in sensitive_ids.txt. A flag that cannot be read is no
    "not sensitive": it refuses the store, naming the row, before anything is written."""
    path = Path(reads.path)
    if reads.kind == "sqlite":
        import recall_kit.registry as registry
        from recall_kit.study.init import importer_options

        importer = registry.importers.create("sqlite", importer_options(reads.columns))
        rows, counts = importer.read_memories(path)
        sensitive, dropped = sorted(importer.sensitive_ids), int(counts["dropped"].get("rows_sensitive", 0))
    else:
        source = path / "corpus.jsonl" if reads.kind == "dataset" else path
        if not source.is_file():
            raise DatasetError(f"{shown_path(source)}: not found ([store] {reads.kind} in {reads.study_file}).")
        check_corpus_rows(source)  # problems named in the user's file and line, not the copy's
        rows, sensitive, dropped = _readable_rows(source)
    if not rows:
        raise DatasetError(f"{shown_path(path)}: holds no memories that may be studied.")
    write_jsonl_atomic(folder / "corpus.jsonl", rows)
    if sensitive:
        from recall_kit.dataset import SENSITIVE_IDS_FILE

        (folder / SENSITIVE_IDS_FILE).write_text("".join(f"{doc}\n" for doc in sensitive), encoding="utf-8")
    importance = sum(1 for row in rows if row.get("importance") is not None)
    write_output(folder / "corpus.json", CorpusSummary(source=reads.kind, memories=len(rows), sensitive_dropped=dropped,
                                                       importance_share=round(importance / len(rows), 4)))


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


# -- evaluation set ---------------------------------------------------------------------------------


def make_evaluation_set(reads: EvaluationSetReads, artefacts: Artefacts, folder: Path) -> None:
    """corpus + the user's queries and qrels (or none) + exact queries generated from the corpus alone."""
    from recall_kit.dataset import load_dataset

    corpus = artefacts.path("corpus")
    shutil.copyfile(corpus / "corpus.jsonl", folder / "corpus.jsonl")
    files = [Path(file) for file in reads.files]
    for source, name in zip(files, ("queries.jsonl", "qrels.jsonl"), strict=False):
        if not source.is_file():
            raise DatasetError(f"{shown_path(source)}: not found ([evaluation_set] in {reads.study_file}).")
        shutil.copyfile(source, folder / name)
    if files:  # the user's queries and qrels, problems named in their files
        check_copied_queries(folder, dict(zip(("queries.jsonl", "qrels.jsonl"), files, strict=False)))
        _drop_sensitive_labels(corpus, folder, files[1].name if len(files) > 1 else "qrels.jsonl")
    supplied = {row.get("stratum") or "all" for row in read_rows(folder / "queries.jsonl")} if files else set()
    built = {stratum: "supplied with the store's queries and qrels" if reads.queries == "dataset"
             else "supplied by the user (queries and qrels files)" for stratum in supplied}
    _generate(reads, folder, supplied, built)
    dataset = load_dataset(folder)
    write_json_atomic(folder / "strata.json", {stratum: {"built": built.get(stratum, "supplied by the user"),
                                                         "generated": "alone by 'exact'" in built.get(stratum, "")}
                                               for stratum in dataset.strata})


def _generate(reads: EvaluationSetReads, folder: Path, supplied: set[str], built: dict[str, str]) -> None:
    """The generated queries (exact = N, generate) added to the evaluation set; `built` says how."""
    from recall_kit.curate.generate import generate_into

    requests = ([("exact", reads.exact)] if reads.exact else []) + list(reads.generate.items())
    if requests:
        seed = reads.seed or 0
        options = {"exact": reads.exact_options, **reads.generate_options}
        summary = generate_into(folder, requests, seed=seed, options=options)
        check_generated(reads.study_file, summary.requested, summary.written,
                        memories=len(read_rows(folder / "corpus.jsonl")))
        short = {name: f"; asked {wanted}, generated {summary.written.get(name, 0)}"
                 for name, wanted in summary.requested.items() if summary.written.get(name, 0) < wanted}
        rows = read_rows(folder / "queries.jsonl")
        for row in rows:
            generator = row.get("_generator")
            if generator is None:
                continue
            if row.get("stratum") in supplied:  # the user's own stratum stays apart from a generated one
                row["stratum"] = f"{row['stratum']}-generated"
            built[row["stratum"]] = (f"generated from the corpus alone by 'exact' (seed {seed}; no system "
                                     "in the loop" if generator == "exact" else
                                     f"generated from the corpus by the {generator!r} generator (seed {seed}"
                                     ) + short.get(generator, "") + ")"
        write_jsonl_atomic(folder / "queries.jsonl", rows)


def _drop_sensitive_labels(corpus: Path, folder: Path, source: str) -> None:
    """Judgments of memories the corpus step dropped as sensitive are dropped too (a query left with
    none goes with them), and how many is said: the store's own labels may name them, and a label
    of a memory that was never indexed can be neither found nor scored. The ids go into the
    evaluation set's sensitive_ids.txt (ids only), so a live system that returns one is named.
    `source`: the name of the user's qrels file, which sensitive.json names for the document."""
    import sys

    from recall_kit.dataset import SENSITIVE_IDS_FILE, as_id

    listed = corpus / SENSITIVE_IDS_FILE
    if not listed.is_file():
        return
    sensitive = set(listed.read_text(encoding="utf-8").split())
    shutil.copyfile(listed, folder / SENSITIVE_IDS_FILE)
    kept, dropped_labels, dropped_queries = [], 0, set()
    for row in read_rows(folder / "qrels.jsonl"):
        field = "relevance" if isinstance(row.get("relevance"), dict) else "relevant_ids"
        labels = row.get(field)
        if isinstance(labels, dict):
            row[field] = {doc: grade for doc, grade in labels.items() if str(doc) not in sensitive}
        elif isinstance(labels, list):
            row[field] = [doc for doc in labels if str(doc) not in sensitive]
        else:
            kept.append(row)  # malformed: the dataset check names it
            continue
        dropped = len(labels) - len(row[field])
        dropped_labels += dropped
        if dropped and not row[field]:
            dropped_queries.add(as_id(row.get("query_id")))
            continue
        kept.append(row)
    write_json_atomic(folder / "sensitive.json", {"labels_dropped": dropped_labels,
                                                  "queries_dropped": len(dropped_queries), "file": source})
    if not dropped_labels:
        return
    write_jsonl_atomic(folder / "qrels.jsonl", kept)
    if dropped_queries:
        write_jsonl_atomic(folder / "queries.jsonl", [row for row in read_rows(folder / "queries.jsonl")
                                                      if as_id(row.get("query_id")) not in dropped_queries])
    print(f"study: evaluation-set: {dropped_labels} judgment(s) dropped because their memory is sensitive"
          + (f"; {len(dropped_queries)} query(ies) left without judgments dropped with them" if dropped_queries
             else "") + ".", file=sys.stderr)




# -- lint -------------------------------------------------------------------------------------------


def make_lint(_: LintReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit dataset lint`: every stratum against its construction rule (ids only)."""
    from recall_kit.curate.lint import lint_dataset
    from recall_kit.dataset import load_dataset

    report = lint_dataset(load_dataset(artefacts.path("evaluation-set")))
    write_json_atomic(folder / "lint.json", report.to_dict())


def lint_command(_: LintReads, folder: Path) -> str:
    return "recall-kit dataset lint steps/evaluation-set"
