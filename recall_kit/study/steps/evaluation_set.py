"""The evaluation-set step: the corpus, the user's queries and qrels (or none; their labels of
memories dropped as sensitive dropped too) and the queries generated from the corpus alone."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.errors import DatasetError, SpecError
from recall_kit.fileio import write_jsonl_atomic
from recall_kit.study.config import StudyConfig, shown_path
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import StepRule, hashes, read_rows, write_output
from recall_kit.study.validate import check_copied_queries, check_generated


@dataclass
class StratumBuilt:
    """strata.json, stratum -> how its queries were made (`built`, said in the document) and whether
    they were generated from the corpus alone (`generated`: the corpus is the rule they follow)."""

    built: str
    generated: bool


#: strata.json: every stratum of the evaluation set, as its step wrote it.
Strata = dict[str, StratumBuilt]


@dataclass
class SensitiveDropped:
    """sensitive.json: the user's labels of memories dropped as sensitive, dropped in turn; the queries
    left without labels, dropped with them; and the name of the user's qrels file they came from."""

    labels_dropped: int
    queries_dropped: int
    file: str


@dataclass(frozen=True)
class EvaluationSetReads:
    """[evaluation_set]: the user's queries and qrels (files and hashes) and the queries generated
    (exact = N, generate, their options, and the seed they are drawn with)."""

    study_file: str
    queries: str
    files: list[str]
    data: dict[str, str | None]
    exact: int = 0
    exact_options: dict[str, Any] = field(default_factory=dict)
    generate: dict[str, int] = field(default_factory=dict)
    generate_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The seed of the generators (None: nothing is generated, the seed is not read).
    seed: int | None = None


def evaluation_set_reads(config: StudyConfig) -> EvaluationSetReads:
    files = _query_files(config)
    generating = bool(config.exact or config.generate)
    return EvaluationSetReads(config.source.name, config.queries, [str(f) for f in files], hashes(files),
                              config.exact, dict(config.exact_options), dict(config.generate),
                              dict(config.generate_options), config.seed if generating else None)


def _query_files(config: StudyConfig) -> list[Path]:
    if config.queries == "dataset":
        if config.store.kind != "dataset":
            raise SpecError(f"{config.source}: [evaluation_set] queries = \"dataset\" needs [store] dataset = DIR; "
                            "name queries = FILE and qrels = FILE, or queries = \"generated\" with exact = N.")
        return [config.store.path / "queries.jsonl", config.store.path / "qrels.jsonl"]
    if config.queries == "generated":
        return []
    assert config.qrels is not None
    return [Path(config.queries) if Path(config.queries).is_absolute() else config.source.parent / config.queries,
            config.qrels]


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
    write_output(folder / "strata.json", {stratum: StratumBuilt(built.get(stratum, "supplied by the user"),
                                                                "alone by 'exact'" in built.get(stratum, ""))
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
    write_output(folder / "sensitive.json", SensitiveDropped(dropped_labels, len(dropped_queries), source))
    if not dropped_labels:
        return
    write_jsonl_atomic(folder / "qrels.jsonl", kept)
    if dropped_queries:
        write_jsonl_atomic(folder / "queries.jsonl", [row for row in read_rows(folder / "queries.jsonl")
                                                      if as_id(row.get("query_id")) not in dropped_queries])
    print(f"study: evaluation-set: {dropped_labels} judgment(s) dropped because their memory is sensitive"
          + (f"; {len(dropped_queries)} query(ies) left without judgments dropped with them" if dropped_queries
             else "") + ".", file=sys.stderr)


RULE = StepRule("evaluation-set", EvaluationSetReads, lambda at, _: evaluation_set_reads(at.config),
                make_evaluation_set, needs=lambda _: ["corpus"])
