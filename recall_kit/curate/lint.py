"""Lint an evaluation set: check each stratum against its construction rule, and the qrels against
near-duplicate memories. Findings carry ids and numbers, never memory or query text."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.curate.generate import PhraseIndex
from recall_kit.curate.text import near_duplicate_pairs, word_overlap
from recall_kit.dataset import CORPUS_FILE, QRELS_FILE, Dataset, load_dataset
from recall_kit.errors import OptionError
from recall_kit.fileio import write_jsonl_atomic
from recall_kit.types import DocId, Memory, Query

#: Finding kinds, in report order, with what each one means.
KINDS: dict[str, str] = {
    "paraphrase_overlap": "paraphrase queries whose word overlap with a relevant memory is above the threshold",
    "multihop_one_memory": "multi-hop queries whose word overlap with ONE relevant memory is above the multi-hop "
                           "threshold (answerable from that memory by wording alone)",
    "exact_not_unique": "exact queries whose phrase occurs in memories the qrels do not judge",
    "exact_not_found": "exact queries whose phrase occurs in none of their relevant memories",
    "twin_split": "queries judging one near-duplicate twin relevant and leaving the other unjudged",
    "small_stratum": "strata with too few queries to rank systems",
    "no_relevant": "queries with no relevant id (grade >= 1)",
}


@dataclass(frozen=True)
class Finding:
    """One problem. `ids` are memory ids; `value` is the number that broke the rule."""

    kind: str
    query_id: str | None = None
    stratum: str | None = None
    ids: tuple[DocId, ...] = ()
    value: float | None = None
    #: For twin_split: the grade of the judged twin (what --fix-twins gives the other).
    grade: int | None = None

    def describe(self) -> str:
        parts = [self.query_id or f"stratum {self.stratum}"]
        if self.kind in ("paraphrase_overlap", "multihop_one_memory"):
            parts.append(f"overlap {self.value:.3f} with ids {', '.join(self.ids)}")
        elif self.kind == "exact_not_unique":
            parts.append(f"phrase also in unjudged ids {', '.join(self.ids)}")
        elif self.kind == "exact_not_found":
            parts.append(f"phrase not in relevant ids {', '.join(self.ids)}")
        elif self.kind == "twin_split":
            parts.append(f"id {self.ids[0]} (grade {self.grade}) judged, twin {self.ids[1]} not"
                         f" (similarity {self.value:.3f})")
        elif self.kind == "small_stratum":
            parts.append(f"{int(self.value or 0)} queries")
        return ": ".join(parts)


@dataclass
class LintReport:
    """All findings of one lint run, the settings used, and aggregate numbers."""

    path: str
    settings: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    #: Near-duplicate pairs found in the corpus (id, id, similarity), whether judged or not.
    twin_pairs: list[tuple[DocId, DocId, float]] = field(default_factory=list)
    queries: int = 0
    strata: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.findings

    def counts(self) -> dict[str, int]:
        counted = Counter(finding.kind for finding in self.findings)
        return {kind: counted.get(kind, 0) for kind in KINDS}

    def by_kind(self, kind: str) -> list[Finding]:
        return [finding for finding in self.findings if finding.kind == kind]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "settings": self.settings,
            "queries": self.queries,
            "strata": self.strata,
            "near_duplicate_pairs": [[a, b, round(s, 4)] for a, b, s in self.twin_pairs],
            "counts": self.counts(),
            "findings": [
                {key: value for key, value in asdict(finding).items() if value not in (None, ())}
                for finding in self.findings
            ],
            "ok": self.ok,
        }

    def lines(self) -> list[str]:
        out = [
            f"{self.path}: {self.queries} queries in {len(self.strata)} strata "
            + "(" + ", ".join(f"{s} {n}" for s, n in self.strata.items()) + "); "
            f"{len(self.twin_pairs)} near-duplicate memory pairs at similarity >= {self.settings['twin_threshold']}"
        ]
        for kind, count in self.counts().items():
            out.append(f"{kind}: {count} ({KINDS[kind]})")
            for finding in self.by_kind(kind):
                out.append(f"  {finding.describe()}")
        out.append("ok: no problems found" if self.ok else f"{len(self.findings)} problem(s) found")
        return out


def _units(dataset: Dataset) -> tuple[dict[DocId, DocId], dict[DocId, list[Memory]]]:
    """memory id -> the id rankings are scored at (its parent's, for a chunk); unit -> memories."""
    unit_of: dict[DocId, DocId] = {}
    members: dict[DocId, list[Memory]] = defaultdict(list)
    for memory in dataset.corpus:
        unit = memory.parent_id or memory.id
        unit_of[memory.id] = unit
        members[unit].append(memory)
    return unit_of, members


def find_twins(
    dataset: Dataset, threshold: float, shingle_size: int = 2, method: str = "auto"
) -> list[tuple[DocId, DocId, float]]:
    """Pairs of near-duplicate memories (at the level rankings are scored), by word-shingle
    Jaccard of their content, with the similarity; chunks of one parent are not pairs."""
    memories = list(dataset.corpus)
    unit_of, _ = _units(dataset)
    best: dict[tuple[DocId, DocId], float] = {}
    for i, j, similarity in near_duplicate_pairs(
        [memory.content for memory in memories], threshold, shingle_size=shingle_size, method=method
    ):
        a, b = unit_of[memories[i].id], unit_of[memories[j].id]
        if a == b:
            continue
        key = (a, b) if a < b else (b, a)
        best[key] = max(best.get(key, 0.0), similarity)
    return sorted((a, b, s) for (a, b), s in best.items())


def check_lint_settings(paraphrase_max_overlap: float, twin_threshold: float, min_queries: int,
                        shingle_size: int, multihop_max_overlap: float = 0.35) -> None:
    """Thresholds are user input: a NaN turned a check off, 2.0 ended in an "unexpected" error."""
    import math

    if not (math.isfinite(paraphrase_max_overlap) and 0 <= paraphrase_max_overlap <= 1):
        raise OptionError(f"--paraphrase-max-overlap must be a share in [0, 1], got {paraphrase_max_overlap}.")
    if not (math.isfinite(multihop_max_overlap) and 0 <= multihop_max_overlap <= 1):
        raise OptionError(f"--multihop-max-overlap must be a share in [0, 1], got {multihop_max_overlap}.")
    if not (math.isfinite(twin_threshold) and 0 < twin_threshold <= 1):
        raise OptionError(f"--twin-threshold must be in (0, 1], got {twin_threshold}.")
    if min_queries < 0:
        raise OptionError(f"--min-queries must be 0 or more, got {min_queries}.")
    if shingle_size < 1:
        raise OptionError(f"--shingle-size must be at least 1, got {shingle_size}.")


def lint_dataset(
    dataset: Dataset,
    paraphrase_max_overlap: float = 0.18,
    twin_threshold: float = 0.8,
    min_queries: int = 30,
    shingle_size: int = 2,
    exact_strata: Iterable[str] = ("exact",),
    paraphrase_strata: Iterable[str] = ("paraphrase",),
    method: str = "auto",
    multihop_strata: Iterable[str] = ("multihop", "multi-hop"),
    multihop_max_overlap: float = 0.35,
) -> LintReport:
    """Check `dataset` against the construction rules; return every finding (ids only).

    A paraphrase query must not share more than `paraphrase_max_overlap` of its words with any
    relevant memory (0.18, the seed study's threshold); a multi-hop query no more than
    `multihop_max_overlap` with any ONE of its relevant memories (it would then be answered from
    that memory alone, by its words). The multi-hop default, 0.35, is what recall-kit-llm's
    multi-hop generator accepts: a first hop naturally shares some wording with its bridge memory."""
    check_lint_settings(paraphrase_max_overlap, twin_threshold, min_queries, shingle_size, multihop_max_overlap)
    exact_strata, paraphrase_strata = set(exact_strata), set(paraphrase_strata)
    overlap_kinds = {stratum: "multihop_one_memory" for stratum in multihop_strata}
    overlap_kinds.update({stratum: "paraphrase_overlap" for stratum in paraphrase_strata})
    report = LintReport(
        path=str(dataset.path),
        settings={"paraphrase_max_overlap": paraphrase_max_overlap, "multihop_max_overlap": multihop_max_overlap,
                  "twin_threshold": twin_threshold,
                  "min_queries": min_queries, "shingle_size": shingle_size},
        queries=len(dataset.queries),
        strata=dict(sorted(Counter(query.stratum for query in dataset.queries).items())),
    )
    unit_of, members = _units(dataset)
    index = PhraseIndex(dataset.corpus)
    report.twin_pairs = find_twins(dataset, twin_threshold, shingle_size, method)
    twins_of: dict[DocId, list[tuple[DocId, float]]] = defaultdict(list)
    for a, b, similarity in report.twin_pairs:
        twins_of[a].append((b, similarity))
        twins_of[b].append((a, similarity))

    findings: list[Finding] = []
    for query in dataset.queries:
        judgments = dataset.qrels.get(query.query_id, {})
        relevant = {doc: grade for doc, grade in judgments.items() if grade >= 1}
        if not relevant:
            findings.append(Finding("no_relevant", query.query_id, query.stratum))
            continue
        if query.stratum in overlap_kinds:
            kind = overlap_kinds[query.stratum]
            limit = multihop_max_overlap if kind == "multihop_one_memory" else paraphrase_max_overlap
            findings += _overlap_findings(query, relevant, members, kind, limit)
        if query.stratum in exact_strata:
            findings += _exact_findings(query, judgments, relevant, index, unit_of)
        findings += _twin_findings(query, judgments, relevant, twins_of)
    for stratum, count in report.strata.items():
        if count < min_queries:
            findings.append(Finding("small_stratum", None, stratum, (), float(count)))
    order = list(KINDS)
    report.findings = sorted(findings, key=lambda f: (order.index(f.kind), f.query_id or "", f.stratum or "", f.ids))
    return report


def _overlap_findings(query: Query, relevant: dict[DocId, int], members: dict[DocId, list[Memory]], kind: str,
                      limit: float) -> list[Finding]:
    """A paraphrase (or multi-hop) query sharing more than `limit` of its words with a relevant
    memory (with any one of a unit's memories): one finding naming those memories."""
    overlaps = {
        doc: max((word_overlap(query.text, memory) for memory in members.get(doc, ())), default=0.0)
        for doc in relevant
    }
    over = sorted(doc for doc, value in overlaps.items() if value > limit)
    if not over:
        return []
    return [Finding(kind, query.query_id, query.stratum, tuple(over), round(max(overlaps[doc] for doc in over), 4))]


def _exact_findings(query: Query, judgments: dict[DocId, int], relevant: dict[DocId, int], index: PhraseIndex,
                    unit_of: dict[DocId, DocId]) -> list[Finding]:
    """An exact query whose phrase occurs in unjudged memories too, or not in a relevant one."""
    findings = []
    occurs = {unit_of[doc] for doc in index.memories_containing(query.text)}
    unjudged = sorted(occurs - set(judgments))
    if unjudged:
        findings.append(Finding("exact_not_unique", query.query_id, query.stratum, tuple(unjudged),
                                float(len(occurs))))
    missing = sorted(set(relevant) - occurs)
    if missing:
        findings.append(Finding("exact_not_found", query.query_id, query.stratum, tuple(missing)))
    return findings


def _twin_findings(query: Query, judgments: dict[DocId, int], relevant: dict[DocId, int],
                   twins_of: dict[DocId, list[tuple[DocId, float]]]) -> list[Finding]:
    """A relevant memory whose near-duplicate twin the query leaves unjudged."""
    return [Finding("twin_split", query.query_id, query.stratum, (doc, twin), round(similarity, 4), relevant[doc])
            for doc in sorted(relevant) for twin, similarity in sorted(twins_of.get(doc, ()))
            if twin not in judgments]


def lint_path(path: str | Path, **settings: Any) -> LintReport:
    """Load the dataset folder at `path` and lint it."""
    return lint_dataset(load_dataset(path), **settings)


def missing_twin_grades(dataset: Dataset, twin_pairs: Iterable[tuple[DocId, DocId, float]]) -> dict[str, dict[DocId, int]]:
    """query id -> {unjudged twin: grade} that closes every split twin pair, transitively (a twin of
    an added twin is added too); a twin reached from several judged memories takes the highest grade."""
    twins_of: dict[DocId, set[DocId]] = defaultdict(set)
    for a, b, _ in twin_pairs:
        twins_of[a].add(b)
        twins_of[b].add(a)
    additions: dict[str, dict[DocId, int]] = {}
    for query_id, judgments in dataset.qrels.items():
        grades = dict(judgments)
        added: dict[DocId, int] = {}
        frontier = [doc for doc, grade in grades.items() if grade >= 1]
        while frontier:
            doc = frontier.pop()
            for twin in twins_of.get(doc, ()):
                if twin in judgments:
                    continue  # a person's judgment (0 included) is never overwritten
                if grades[doc] > added.get(twin, 0):
                    added[twin] = grades[doc]
                    grades[twin] = grades[doc]
                    frontier.append(twin)
        if added:
            additions[query_id] = dict(sorted(added.items()))
    return additions


def fix_twins(path: str | Path, report: LintReport) -> dict[str, dict[DocId, int]]:
    """Add every missing twin to the qrels of `path` (grade of its judged twin), rewriting
    qrels.jsonl atomically and keeping each row's form (binary lists stay lists when every grade
    they get is 1). Returns query id -> {added id: grade}."""
    root = Path(path)
    dataset = load_dataset(root)
    additions = missing_twin_grades(dataset, report.twin_pairs)
    if not additions:
        return {}
    raw_ids: dict[str, Any] = {}
    with (root / CORPUS_FILE).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                value = json.loads(line).get("id")
                raw_ids[str(value)] = value
    rows = []
    with (root / QRELS_FILE).open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            added = additions.get(str(row.get("query_id")))
            if added:
                row = _add_to_row(row, added, raw_ids)
            rows.append(row)
    write_jsonl_atomic(root / QRELS_FILE, rows)
    return additions


def _add_to_row(row: dict[str, Any], added: Mapping[DocId, int], raw_ids: Mapping[str, Any]) -> dict[str, Any]:
    row = dict(row)
    if "relevant_ids" in row and all(grade == 1 for grade in added.values()):
        row["relevant_ids"] = list(row["relevant_ids"]) + [raw_ids.get(doc, doc) for doc in added]
        return row
    if "relevant_ids" in row:
        relevance = {str(doc): 1 for doc in row.pop("relevant_ids")}
    else:
        relevance = dict(row.get("relevance") or {})
    relevance.update({doc: grade for doc, grade in added.items()})
    row["relevance"] = relevance
    return row
