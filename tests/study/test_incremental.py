"""Incremental equals from scratch (Bazel's test, edit by edit): a copy of the example study takes
one edit after another (a key some step reads, a person's label, a recipe file, a memory of the
store, a judge and its option); after each, `study status` names exactly the steps whose declared
reads changed, and the incremental rerun's study.json equals a from-scratch run's in a new folder
(timings aside: seconds per step, measured latency and the sentence that quotes it)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from study_support import plugins

from recall_kit import Memory, Query, RelevanceJudge, hookimpl
from recall_kit.curate.assessor import AssessorFile
from recall_kit.dataset import read_qrels_jsonl
from recall_kit.study import run_study, study_status
from recall_kit.testing import registered_plugin

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SYSTEMS = [f"run/{n}" for n in ("fts5", "lexical", "dense", "hybrid", "hybrid-graph")]
EVALS = [name.replace("run/", "eval/") for name in SYSTEMS]
DECIDING = ["compare", "simpler", "bounds", "intervals"]
#: Queries kept of each of the example's three strata (40 each).
QUERIES_PER_STRATUM = 15
#: Of the memories no kept query's qrels name, every MEMORY_STRIDE-th is kept.
MEMORY_STRIDE = 3


@dataclass(frozen=True)
class WordOptions:
    #: Words shorter than this are not compared.
    min_length: int = 5


class WordJudge(RelevanceJudge):
    """A real, simple judge: relevant (2) when the memory holds two of the query's longer words."""

    description = "shared words (tests)"
    Options = WordOptions

    def grade(self, query: Query, memory: Memory) -> int | None:
        size = int(self.options.min_length)
        words = {w for w in re.findall(r"\w+", query.text.lower()) if len(w) >= size}
        return 2 if len(words & set(re.findall(r"\w+", memory.content.lower()))) >= 2 else 0

    def provenance(self) -> dict[str, str]:
        return {"judge": "words", "min_length": str(self.options.min_length)}


class JudgePlugin:
    @hookimpl
    def register_judges(self, register):  # type: ignore[no-untyped-def]
        register("words", WordJudge)


class Study:
    """The example study copied into `root`: its store, recipes and people's labels under shared/,
    the study file under inc/ (the incremental folder inc/out); a from-scratch run copies the study
    file into a new folder beside it (the same depth, so its Reproduce lines read the same)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        shared = root / "shared"
        shutil.copytree(EXAMPLES / "memories", shared / "memories")
        shutil.copytree(EXAMPLES / "systems", shared / "systems")
        _keep_queries(shared / "memories", QUERIES_PER_STRATUM)
        (shared / "labels").mkdir()
        self.shared = shared
        text = (EXAMPLES / "study.toml").read_text(encoding="utf-8")
        text = text.replace('folder = "study-out"', 'folder = "out"')
        text = text.replace('dataset = "memories"', f'dataset = "{(shared / "memories").as_posix()}"')
        text = re.sub(r'config = "systems/', f'config = "{(shared / "systems").as_posix()}/', text)
        text = text.replace("resamples = 2000", "resamples = 300")
        text = text.replace("latency_sample = 40", "latency_sample = 3")
        # the store's labels alone (the example's combined judge would grade every pair: no label to edit)
        text = re.sub(r'^judge = .*$', f'judge = "qrels"\npeople = ["{(shared / "labels").as_posix()}/*.jsonl"]', text,
                      count=1, flags=re.M)
        self.file = root / "inc" / "study.toml"
        self.file.parent.mkdir()
        self.file.write_text(text, encoding="utf-8")
        self.scratch: dict[str, dict[str, Any]] = {}

    def edit(self, old: str, new: str) -> None:
        text = self.file.read_text(encoding="utf-8")
        assert text.count(old) == 1, old
        self.file.write_text(text.replace(old, new), encoding="utf-8")

    def stale(self) -> set[str]:
        return {state.name for state in study_status(self.file) if state.state == "stale"}

    def incremental(self) -> dict[str, Any]:
        run_study(self.file)
        return comparable(self.file.parent / "out" / "study.json")

    def from_scratch(self) -> dict[str, Any]:
        """A clean run of the study as it stands, in a new folder (shared between identical states)."""
        key = hashlib.sha256(self.file.read_bytes())
        for path in sorted(self.shared.rglob("*")):
            if path.is_file():
                key.update(path.as_posix().encode() + path.read_bytes())
        digest = key.hexdigest()
        if digest not in self.scratch:
            folder = self.root / f"scratch-{len(self.scratch)}"
            folder.mkdir()
            shutil.copyfile(self.file, folder / "study.toml")
            run_study(folder / "study.toml")
            self.scratch[digest] = comparable(folder / "out" / "study.json")
        return self.scratch[digest]


def _keep_queries(store: Path, per_stratum: int) -> None:
    """The store's first `per_stratum` queries of each stratum, their qrels, and part of its memories:
    what the test checks (which steps rerun, and that the rerun equals a clean run) does not depend
    on the store's size, and each of the ~60 study runs costs a fraction of the whole example's."""
    queries = [json.loads(line) for line in (store / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    by_stratum: dict[str, list[dict[str, Any]]] = {}
    for query in queries:
        by_stratum.setdefault(query["stratum"], []).append(query)
    kept = [query for stratum in by_stratum.values() for query in stratum[:per_stratum]]
    ids = {query["query_id"] for query in kept}
    qrels = [line for line in (store / "qrels.jsonl").read_text(encoding="utf-8").splitlines()
             if json.loads(line)["query_id"] in ids]
    (store / "queries.jsonl").write_text("".join(json.dumps(query) + "\n" for query in kept), encoding="utf-8")
    (store / "qrels.jsonl").write_text("".join(line + "\n" for line in qrels), encoding="utf-8")
    # The memories those queries' qrels name, and every third other one (the rest of the pool):
    # fewer memories to index and search in each run, the same steps reading them.
    relevant = {doc for judged in read_qrels_jsonl(store / "qrels.jsonl").values() for doc in judged}
    lines = (store / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    memories = [line for number, line in enumerate(lines)
                if number % MEMORY_STRIDE == 0 or str(json.loads(line)["id"]) in relevant]
    (store / "corpus.jsonl").write_text("".join(line + "\n" for line in memories), encoding="utf-8")


def comparable(path: Path) -> dict[str, Any]:
    """study.json without what a clock measures: seconds per step, latency, build time, and the
    verdicts' "what it trades" (latency ratios)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("timings")
    for system in data["systems"]:
        for key in ("latency_p50_ms", "latency_p95_ms", "build_seconds"):
            system.pop(key)
    for verdict in data["verdicts"]:
        verdict.pop("trades")
    return data  # type: ignore[no-any-return]


def label(study: Study, pair: int, grade: int | None) -> Callable[[], None]:
    """Grade (None: ungrade) the pool's `pair`-th unjudged pair, as `recall-kit label` would."""
    def change() -> None:
        pool = [json.loads(line) for line in (study.file.parent / "out" / "steps" / "pool" / "pool.jsonl")
                .read_text().splitlines()]
        query, doc = [(row["query_id"], str(d)) for row in pool for d in row["doc_ids"]][pair]
        file = AssessorFile.open(study.shared / "labels" / "ann.jsonl", "ann")
        if grade is None:
            del file.grades[query][doc]
            file.save()
        else:
            file.grade(query, doc, grade)
    return change


def replace_in(path_of: Callable[[], Path], old: str, new: str) -> Callable[[], None]:
    def change() -> None:
        path = path_of()
        text = path.read_text(encoding="utf-8")
        assert text.count(old) >= 1, old
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return change


def edits(study: Study) -> list[tuple[str, Callable[[], None], set[str]]]:
    """(what, the edit, the steps whose declared reads it changes), applied in this order."""
    key = study.edit

    def toml(old: str, new: str) -> Callable[[], None]:
        return lambda: key(old, new)

    first_memory = json.loads((study.shared / "memories" / "corpus.jsonl").read_text().splitlines()[0])
    memory_text = json.dumps(first_memory["content"])[1:-1]
    return [
        ("[study] name", toml('name = "example memories"', 'name = "renamed"'), {"document"}),
        ("[study] decision_metrics: mrr@5 to exploratory",
         _both(toml('decision_metrics = ["recall@5", "mrr@5"]', 'decision_metrics = ["recall@5"]'),
               toml('exploratory_metrics = ["recall@10", "ndcg@10"]',
                    'exploratory_metrics = ["mrr@5", "recall@10", "ndcg@10"]')),
         {*DECIDING, "ablation", "document"}),
        ("[study] decision_metrics back",
         _both(toml('decision_metrics = ["recall@5"]', 'decision_metrics = ["recall@5", "mrr@5"]'),
               toml('exploratory_metrics = ["mrr@5", "recall@10", "ndcg@10"]',
                    'exploratory_metrics = ["recall@10", "ndcg@10"]')),
         {*DECIDING, "ablation", "document"}),
        ("[study] exploratory_metrics", toml('exploratory_metrics = ["recall@10", "ndcg@10"]',
                                             'exploratory_metrics = ["recall@10", "ndcg@10", "hit@3"]'),
         {*SYSTEMS, *EVALS, "compare", "simpler", "ablation", "sweep", "document"}),
        ("[study] hook_k", toml("hook_k = 5 ", "hook_k = 4 "), {"pool", "intervals", "document"}),
        ("[study] seed", toml("seed = 0", "seed = 1"),
         {*SYSTEMS, *EVALS, "agreement", *DECIDING, "ablation", "sweep", "document"}),
        ("[study] resamples", toml("resamples = 300", "resamples = 250"),
         {*DECIDING, "ablation", "sweep", "document"}),
        ("[study] baseline", toml('baseline = "fts5"', 'baseline = "lexical"'), {*DECIDING, "document"}),
        ("[study] margin", toml('resamples = 250', 'resamples = 250\nmargin = 0.05'), {"document"}),
        ("[evaluation_set] min_queries", toml("min_queries = 50", "min_queries = 30"), {"document"}),
        ("[judging] min_kappa", toml('pool_depth = 10 ', 'min_kappa = 0.7\npool_depth = 10 '), {"document"}),
        ("[production] embedding_model", toml('embedding_model = "sentence-transformers/all-MiniLM-L6-v2"',
                                              'embedding_model = "all-mpnet-base-v2"'), {"document"}),
        ("[ablation] system", toml('system = ""', 'system = "hybrid-graph"'), {"ablation", "document"}),
        ("[sweep] holdout", toml("holdout = 0.5", "holdout = 0.4"), {"sweep", "document"}),
        ("[sweep] guards", toml('guards = ["ndcg@10"]', "guards = []"), {"sweep", "document"}),
        ("[sweep] grid", toml('grid = ["dense=0.35,0.7,1.4"]', 'grid = ["dense=0.35,0.7"]'), {"sweep", "document"}),
        ("a person's label added", label(study, 0, 2), {"judgments", "agreement", "intervals"}),
        ("a person's label changed", label(study, 0, 0), {"judgments", "agreement", "intervals"}),
        ("a second label added", label(study, 7, 3), {"judgments", "agreement", "intervals"}),
        ("a person's label removed", label(study, 0, None), {"judgments", "agreement", "intervals"}),
        ("a recipe file (lexical.toml)", replace_in(lambda: study.shared / "systems" / "lexical.toml",
                                                    "b = 0.5", "b = 0.6"), {"run/lexical", "eval/lexical"}),
        ("a system's options in study.toml", toml('weight = 1\ndate = false\n\n[[systems]]\nname = "dense"',
                                                  'weight = 2\ndate = false\n\n[[systems]]\nname = "dense"'),
         {"run/lexical", "eval/lexical", "document"}),
        ("a memory of the store", replace_in(lambda: study.shared / "memories" / "corpus.jsonl", memory_text,
                                             memory_text + " Edited."), {"corpus"}),
        ("[evaluation_set] exact", toml("exact = 0 ", "exact = 6 "), {"evaluation-set"}),
        ("[judging] pool_depth", toml("pool_depth = 10 ", "pool_depth = 12 "),
         {*SYSTEMS, *EVALS, "pool", "ablation", "sweep", "document"}),
        ("[cost] latency_sample", toml("latency_sample = 3", "latency_sample = 2"), {*SYSTEMS, *EVALS}),
        ("[judging] judge", toml('judge = "qrels"', 'judge = "words"'), {"judgments", "agreement", "intervals"}),
        ("a judge option", toml('judge = "words"', 'judge = "words"\noptions = {min_length = 6}'), {"judgments"}),
        ("[judging] sample", toml('judge = "words"', 'judge = "words"\nsample = 40'), {"judgments"}),
    ]


def _both(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    def change() -> None:
        first()
        second()
    return change


@pytest.fixture
def example(tmp_path: Path) -> Iterator[Study]:
    with (plugins("recall-kit-fts5", "recall-kit-bm25", "recall-kit-fusion", "recall-kit-dense", "recall-kit-graph"),
          registered_plugin(JudgePlugin(), name="words-judge-incremental-test")):
        yield Study(tmp_path)


@pytest.mark.slow
def test_every_edit_reruns_exactly_what_reads_it_and_ends_where_a_clean_run_does(example: Study) -> None:
    assert example.incremental() == example.from_scratch()
    found = edits(example)
    assert len(found) >= 25
    for what, change, expected in found:
        change()
        assert example.stale() == expected, what
        assert example.incremental() == example.from_scratch(), what
        if what == "[study] decision_metrics: mrr@5 to exploratory":  # the seed review's finding, come back
            ablation = example.file.parent / "out" / "steps" / "ablation" / "ablation" / "ablation.json"
            assert json.loads(ablation.read_text())["comparison"]["test"]["primary"] == ["recall@5"]
