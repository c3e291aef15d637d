"""The study's steps: each one the library call a single recall-kit command makes.

corpus (the store, sensitive rows dropped) -> evaluation-set -> lint; run/NAME for every system;
pool (their unjudged top ids) -> judgments (the user's qrels, or a model judge on the pool) ->
agreement; eval/NAME (scored on the judged set) -> compare; ablation of the best hybrid; sweep;
document. `build_graph` wires them into a `StudyGraph`.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from recall_kit.errors import DatasetError, SpecError
from recall_kit.fileio import write_json_atomic, write_jsonl_atomic
from recall_kit.study.config import StudyConfig
from recall_kit.study.graph import Step, StudyGraph, file_hash
from recall_kit.study.labels import BoundsReads, make_bounds
from recall_kit.study.validate import check_copied_queries, check_corpus_rows, check_generated

DATASET_FILES = ("corpus.jsonl", "queries.jsonl", "qrels.jsonl")


@cache
def versions() -> dict[str, str]:
    """recall-kit and every installed recall-kit plugin distribution -> its version."""
    from importlib.metadata import distributions

    found = {}
    for distribution in distributions():
        name = distribution.metadata["Name"] or ""
        if name.lower().replace("_", "-").startswith("recall-kit"):
            found[name.lower().replace("_", "-")] = distribution.version
    return dict(sorted(found.items()))


@cache
def renderer_hash() -> str:
    """A hash of this package's source: a change to the rules, detectors or document re-renders it."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _hashes(paths: list[Path]) -> dict[str, str | None]:
    return {str(path): file_hash(path) if path.is_file() else None for path in paths}


def _read_rows(path: Path) -> list[dict[str, Any]]:
    from recall_kit.dataset import read_jsonl

    return [row for _, row in read_jsonl(path)]


# -- corpus ---------------------------------------------------------------------------------------


def _store_files(config: StudyConfig) -> list[Path]:
    store = config.store
    if store.kind == "dataset":
        return [store.path / "corpus.jsonl"]
    return [store.path]


def make_corpus(config: StudyConfig, folder: Path) -> None:
    """The store's memories as corpus.jsonl; sensitive rows are dropped before anything is written,
    their ids (never their text) kept in sensitive_ids.txt. A flag that cannot be read is no
    "not sensitive": it refuses the store, naming the row, before anything is written."""
    store = config.store
    if store.kind == "sqlite":
        from recall_kit import registry
        from recall_kit.study.init import importer_options

        importer = registry.importers.create("sqlite", importer_options(store.columns))
        rows, counts = importer.read_memories(store.path)
        sensitive, dropped = sorted(importer.sensitive_ids), int(counts["dropped"].get("rows_sensitive", 0))
    else:
        source = store.path / "corpus.jsonl" if store.kind == "dataset" else store.path
        if not source.is_file():
            raise DatasetError(f"{source}: not found ([store] {store.kind} in {config.source.name}).")
        check_corpus_rows(source)  # problems named in the user's file and line, not the copy's
        rows, sensitive, dropped = _readable_rows(source)
    if not rows:
        raise DatasetError(f"{store.path}: holds no memories that may be studied.")
    write_jsonl_atomic(folder / "corpus.jsonl", rows)
    if sensitive:
        from recall_kit.dataset import SENSITIVE_IDS_FILE

        (folder / SENSITIVE_IDS_FILE).write_text("".join(f"{doc}\n" for doc in sensitive), encoding="utf-8")
    importance = sum(1 for row in rows if row.get("importance") is not None)
    write_json_atomic(folder / "corpus.json", {"source": store.kind, "memories": len(rows),
                                               "sensitive_dropped": dropped,
                                               "importance_share": round(importance / len(rows), 4)})


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


def make_evaluation_set(config: StudyConfig, corpus: Path, folder: Path) -> None:
    """corpus + the user's queries and qrels (or none) + exact queries generated from the corpus alone."""
    from recall_kit.curate.generate import generate_into
    from recall_kit.dataset import load_dataset

    shutil.copyfile(corpus / "corpus.jsonl", folder / "corpus.jsonl")
    files = _query_files(config)
    for source, name in zip(files, ("queries.jsonl", "qrels.jsonl"), strict=False):
        if not source.is_file():
            raise DatasetError(f"{source}: not found ([evaluation_set] in {config.source.name}).")
        shutil.copyfile(source, folder / name)
    if files:  # the user's queries and qrels, problems named in their files
        check_copied_queries(config, folder, dict(zip(("queries.jsonl", "qrels.jsonl"), files, strict=False)))
        _drop_sensitive_labels(corpus, folder)
    supplied = {row.get("stratum") or "all" for row in _read_rows(folder / "queries.jsonl")} if files else set()
    built = {stratum: "supplied with the store's queries and qrels" if config.queries == "dataset"
             else "supplied by the user (queries and qrels files)" for stratum in supplied}
    requests = ([("exact", config.exact)] if config.exact else []) + list(config.generate.items())
    if requests:
        options = {"exact": config.exact_options, **config.generate_options}
        summary = generate_into(folder, requests, seed=config.seed, options=options)
        check_generated(config, summary.requested, summary.written,
                        memories=len(_read_rows(folder / "corpus.jsonl")))
        short = {name: f"; asked {wanted}, generated {summary.written.get(name, 0)}"
                 for name, wanted in summary.requested.items() if summary.written.get(name, 0) < wanted}
        rows = _read_rows(folder / "queries.jsonl")
        for row in rows:
            generator = row.get("_generator")
            if generator is None:
                continue
            if row.get("stratum") in supplied:  # the user's own stratum stays apart from a generated one
                row["stratum"] = f"{row['stratum']}-generated"
            built[row["stratum"]] = (f"generated from the corpus alone by 'exact' (seed {config.seed}; no system "
                                     "in the loop" if generator == "exact" else
                                     f"generated from the corpus by the {generator!r} generator (seed {config.seed}"
                                     ) + short.get(generator, "") + ")"
        write_jsonl_atomic(folder / "queries.jsonl", rows)
    dataset = load_dataset(folder)
    write_json_atomic(folder / "strata.json", {stratum: {"built": built.get(stratum, "supplied by the user"),
                                                         "generated": "alone by 'exact'" in built.get(stratum, "")}
                                               for stratum in dataset.strata})


def _drop_sensitive_labels(corpus: Path, folder: Path) -> None:
    """Judgments of memories the corpus step dropped as sensitive are dropped too (a query left with
    none goes with them), and how many is said: the store's own labels may name them, and a label
    of a memory that was never indexed can be neither found nor scored. The ids go into the
    evaluation set's sensitive_ids.txt (ids only), so a live system that returns one is named."""
    import sys

    from recall_kit.dataset import SENSITIVE_IDS_FILE, as_id

    listed = corpus / SENSITIVE_IDS_FILE
    if not listed.is_file():
        return
    sensitive = set(listed.read_text(encoding="utf-8").split())
    shutil.copyfile(listed, folder / SENSITIVE_IDS_FILE)
    kept, dropped_labels, dropped_queries = [], 0, set()
    for row in _read_rows(folder / "qrels.jsonl"):
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
                                                  "queries_dropped": len(dropped_queries)})
    if not dropped_labels:
        return
    write_jsonl_atomic(folder / "qrels.jsonl", kept)
    if dropped_queries:
        write_jsonl_atomic(folder / "queries.jsonl", [row for row in _read_rows(folder / "queries.jsonl")
                                                      if as_id(row.get("query_id")) not in dropped_queries])
    print(f"study: evaluation-set: {dropped_labels} judgment(s) dropped because their memory is sensitive"
          + (f"; {len(dropped_queries)} query(ies) left without judgments dropped with them" if dropped_queries
             else "") + ".", file=sys.stderr)


# -- systems, pool, judgments -------------------------------------------------------------------------


def make_run(config: StudyConfig, name: str, dataset_folder: Path, folder: Path) -> None:
    """`recall-kit eval`: the system built, run, timed and scored on the evaluation set."""
    from recall_kit import load_dataset, run_benchmark

    result = run_benchmark(config.system(name).spec(), load_dataset(dataset_folder), k=config.depth,
                           metrics=config.metrics, latency_sample=config.latency_sample, seed=config.seed,
                           show_progress=False)
    result.save(folder / "result.json")


def make_pool(config: StudyConfig, graph: StudyGraph, folder: Path) -> None:
    """`recall-kit pool`: every system's unjudged ids at the pool depth; and the holes at the hook's k."""
    from recall_kit import load_dataset, load_result
    from recall_kit.curate.pool import pool_unjudged

    dataset = load_dataset(graph.path("evaluation-set"))
    named = [(system.name, load_result(graph.path(f"run/{system.name}") / "result.json")) for system in config.systems]
    pool = pool_unjudged(named, dataset, depth=config.pool_depth)
    write_jsonl_atomic(folder / "pool.jsonl", pool.rows)
    holes = {}
    for name, result in named:
        top = [doc for query_id, ranking in result.rankings().items() for doc in ranking[:config.hook_k]
               if doc not in dataset.qrels.get(query_id, {})]
        returned = sum(len(ranking[:config.hook_k]) for ranking in result.rankings().values())
        holes[name] = round(len(top) / returned, 4) if returned else 0.0
    write_json_atomic(folder / "pool.json", {"depth": pool.depth, "counts": pool.counts,
                                             "ids": sum(len(row["doc_ids"]) for row in pool.rows),
                                             "queries": len(pool.rows), "unjudged_share_at_hook_k": holes})


def make_judgments(config: StudyConfig, graph: StudyGraph, folder: Path) -> None:
    """The labels the study scores with: the user's qrels, then people's grades (`recall-kit label`'s
    files), then a model judge's grades of the pool, each only where nothing before it judged the pair."""
    from recall_kit.study.labels import merge_labels, people_files, people_grades, read_people

    evaluation = graph.path("evaluation-set")
    out = folder / "dataset"
    out.mkdir()
    for name in DATASET_FILES:
        shutil.copyfile(evaluation / name, out / name)
    people = read_people(people_files(config))
    layers = [people_grades(people)] if people else []
    info: dict[str, Any] = {"source": "qrels", "pooled_labels": 0}
    if config.judge != "qrels":
        from recall_kit.curate.judge import build_judge, read_qrels_file

        judge = build_judge(config.judge, {config.judge: config.judge_options} if config.judge_options else None)
        grades_path = folder / "model-grades.jsonl"
        context = _judging_context(config, graph, layers[0] if people else {}) if judge.learns else None
        _judge_pool(config, graph, judge, grades_path, folder, context)
        layers.append(read_qrels_file(grades_path) if grades_path.exists() else {})
        info = {"source": config.judge, "pooled_labels": 0, "provenance": judge.provenance()}
        if context is not None:  # cross-fitted: its grades of the labelled pairs are out of fold
            from recall_kit.curate.evidence import measured_on_labels

            measured = measured_on_labels(judge, context, config.resamples, config.seed)
            info["judge_measured"] = measured.to_dict() if measured is not None else None
    if layers:
        merged, added = merge_labels(_read_rows(evaluation / "qrels.jsonl"), *layers)
        write_jsonl_atomic(out / "qrels.jsonl", merged)
        info["pooled_labels"] = sum(added)
        if people:
            info["people"] = {"assessors": sorted(people), "added": added[0]}
    write_json_atomic(folder / "judgments.json", info)


def _judging_context(config: StudyConfig, graph: StudyGraph, people: Mapping[str, Mapping[str, int]]) -> Any:
    """What a judge that learns (`combined`) is fitted on: the user's qrels and people's grades, taken
    as complete over the systems' runs (a ranked id neither lists counts as not relevant), and
    the runs' ranks and scores. It is cross-fitted: no pair is graded by a model fitted on its query."""
    from recall_kit import load_dataset, load_result
    from recall_kit.curate.evidence import complete_labels, judging_context, pair_evidence

    dataset = load_dataset(graph.path("evaluation-set"))
    named = [(system.name, load_result(graph.path(f"run/{system.name}") / "result.json")) for system in config.systems]
    labels = {query: dict(grades) for query, grades in dataset.qrels.items()}
    for query, grades in people.items():
        for doc, grade in grades.items():
            labels.setdefault(query, {}).setdefault(doc, grade)
    return judging_context(dataset, named, complete_labels(labels, pair_evidence(named)), config.seed)


def _judge_pool(config: StudyConfig, graph: StudyGraph, judge: Any, grades_path: Path, folder: Path,
                context: Any = None) -> None:
    """A model judge over the pool, or over `[judging] sample` pairs of it (study/sample.py)."""
    from recall_kit.curate.judge import judge_with

    evaluation = graph.path("evaluation-set")
    if config.sample:
        from recall_kit.study.sample import judge_sample

        judge_sample(config, graph, judge, grades_path, folder, context)
        return
    judge_with(judge, graph.path("pool") / "pool.jsonl", evaluation, grades_path, show=lambda line: None,
               context=context)


@dataclass(frozen=True)
class AgreementReads:
    """What the agreement step reads: the person's grades (and their hash), the labels' source, the seed."""

    judge: str
    agreement: str | None
    agreement_hash: str | None
    seed: int
    #: People's label files (`recall-kit label`'s) -> their hashes: kappa between them and against a model judge.
    people: dict[str, str | None] = dataclasses.field(default_factory=dict)


def agreement_reads(config: StudyConfig) -> AgreementReads:
    path = config.agreement
    return AgreementReads(judge=config.judge, agreement=str(path) if path else None,
                          agreement_hash=file_hash(path) if path and path.is_file() else None, seed=config.seed,
                          people=_hashes(_people(config)))


def agreement_against(reads: AgreementReads, graph: StudyGraph) -> Path:
    """The labels a second judge's grades are compared with: the model judge's grades, or the user's qrels."""
    if reads.judge == "qrels":
        return graph.path("judgments") / "dataset" / "qrels.jsonl"
    return graph.path("judgments") / "model-grades.jsonl"


def measure_agreement(reads: AgreementReads, graph: StudyGraph) -> dict[str, Any]:
    """The agreement step: a second judge's grades (`[judging] agreement`, qrels JSONL as `recall-kit
    judge` writes) against the labels the study used (a model judge's grades, or the user's own qrels):
    Cohen's kappa on the pairs both graded, as `recall-kit agreement` computes it."""
    against = "the user's qrels" if reads.judge == "qrels" else f"the model judge {reads.judge!r}'s grades"
    people = _people_agreement(reads, graph)
    if people is not None and (reads.agreement is None or not Path(reads.agreement).is_file()):
        if reads.judge != "qrels" and people["against_model"]:
            first = people["against_model"][0]
            return {"measured": True, "against": f"{against}, by {first['assessor']}", "kappa": first["kappa"],
                    "n": first["n"], "kappa_ci": first["interval"], "people": people}
        if people["between"]:
            first = people["between"][0]
            return {"measured": True, "against": f"between assessors {first['a']} and {first['b']}",
                    "kappa": first["kappa"], "n": first["n"], "kappa_ci": first["interval"], "people": people}
    if reads.agreement is None or not Path(reads.agreement).is_file():
        why = ("the labels come from one judge (the user's qrels) and [judging] agreement names no second one"
               if reads.judge == "qrels" else
               "the model judge's grades were never compared with a person's ([judging] agreement names none)")
        return {"measured": False, "why": why, **({"people": people} if people is not None else {})}
    from recall_kit.curate.agreement import agreement_files

    try:
        measured = agreement_files(reads.agreement, agreement_against(reads, graph), seed=reads.seed)
    except DatasetError as error:
        return {"measured": False, "why": str(error).replace(str(graph.folder) + "/", "")}
    return {"measured": True, "against": against, **measured.to_dict(),
            **({"people": people} if people is not None else {})}


def _people_agreement(reads: AgreementReads, graph: StudyGraph) -> dict[str, Any] | None:
    """Kappa between the people who labelled, and of each against the model judge (None: nobody labelled)."""
    from recall_kit.study.labels import people_agreement, read_people

    people = read_people([Path(path) for path in reads.people])
    if not people:
        return None
    model = None
    grades = graph.path("judgments") / "model-grades.jsonl"
    if reads.judge != "qrels" and grades.is_file():
        from recall_kit.curate.judge import read_qrels_file

        model = read_qrels_file(grades)
    return people_agreement(people, model, seed=reads.seed)


def make_eval(config: StudyConfig, graph: StudyGraph, name: str, folder: Path) -> None:
    """The system scored on the judged set: its run as it is when the labels are the user's alone."""
    run = graph.path(f"run/{name}") / "result.json"
    if config.judge == "qrels":
        shutil.copyfile(run, folder / "result.json")
        return
    from recall_kit import load_dataset, run_benchmark

    result = run_benchmark(config.system(name).spec(), load_dataset(graph.path("judgments") / "dataset"),
                           k=config.depth, metrics=config.metrics, latency_sample=config.latency_sample,
                           seed=config.seed, show_progress=False)
    result.save(folder / "result.json")


# -- deciding ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareReads:
    """What a comparison step reads: the systems (the one the others are measured against first), the
    metrics, which of them decide, the resamples, the seed and whether the strata join the Holm family."""

    systems: list[str]
    metrics: list[str]
    decision: list[str]
    resamples: int
    seed: int
    strata: bool


def make_compare(reads: CompareReads, graph: StudyGraph, folder: Path) -> None:
    """`recall-kit compare`: every system against the first, Holm over the decision rows (per stratum
    too when `reads.strata`)."""
    from recall_kit import compare_results, load_result

    if len(reads.systems) < 2:
        write_json_atomic(folder / "skipped.json", {"why": "no other system to compare with"})
        return
    named = [(name, load_result(graph.path(f"eval/{name}") / "result.json")) for name in reads.systems]
    comparison = compare_results(named, metrics=reads.metrics, n_resamples=reads.resamples, seed=reads.seed,
                                 primary=reads.decision, primary_strata=reads.strata)
    write_json_atomic(folder / "comparison.json", comparison.to_dict())


def compare_reads(config: StudyConfig) -> CompareReads:
    """The head-to-head: every candidate against the baseline, per stratum, in one Holm family."""
    order = [config.baseline, *(s.name for s in config.systems if s.name != config.baseline)]
    return CompareReads(order, config.metrics, config.decision_metrics, config.resamples, config.seed, True)


def simpler_reads(config: StudyConfig, graph: StudyGraph) -> CompareReads:
    """The best candidate (best mean on the first decision metric over all queries) against every
    other candidate but the baseline (the head-to-head has that pair): overall, one Holm family."""
    from recall_kit import load_result

    candidates = [s.name for s in config.systems if s.name != config.baseline]
    means = {name: load_result(graph.path(f"eval/{name}") / "result.json").mean(config.decision_metrics[0])
             for name in candidates}
    best = max(candidates, key=lambda name: (means[name], -candidates.index(name)))
    return CompareReads([best, *(name for name in candidates if name != best)], config.metrics,
                        config.decision_metrics, config.resamples, config.seed, False)


def bounds_reads(config: StudyConfig, graph: StudyGraph) -> BoundsReads:
    """The bounds step's rows: the head-to-head's (the baseline first) and the compare-down's (the best first)."""
    head = compare_reads(config)
    simpler = simpler_reads(config, graph).systems if len(head.systems) > 2 else []
    return BoundsReads(head.systems, simpler, list(config.decision_metrics), config.resamples, config.seed)


def declared(name: str, needs: list[str], kind: type, reads: Callable[[], Any],
             make: Callable[[Any, Path], None], common: dict[str, Any], after: list[str] | None = None) -> Step:
    """A step whose fingerprint covers exactly what it reads: `reads()` returns a `kind` (a frozen
    dataclass of JSON values); its fields are the fingerprint's inputs (beside `common`), and `make`
    gets the `kind` rebuilt from those inputs, nothing else of the study file."""
    def run(folder: Path, values: dict[str, Any]) -> None:
        make(kind(**{f.name: values[f.name] for f in dataclasses.fields(kind)}), folder)

    return Step(name, needs, lambda: {**dataclasses.asdict(reads()), **common}, run, after=after or [])


def best_hybrid(config: StudyConfig, graph: StudyGraph) -> str | None:
    """The system the ablation takes apart: `[ablation] system`, else the candidate of two legs or
    more with the best mean on the first decision metric."""
    if config.ablation_system:
        return config.ablation_system
    from recall_kit import load_result

    hybrids = [s.name for s in config.systems if len(s.legs) > 1]
    if not hybrids:
        return None
    means = {name: load_result(graph.path(f"eval/{name}") / "result.json").mean(config.decision_metrics[0])
             for name in hybrids}
    return max(hybrids, key=lambda name: (means[name], -hybrids.index(name)))


def make_ablation(config: StudyConfig, graph: StudyGraph, folder: Path, system: str | None) -> None:
    """`recall-kit ablate`: every single leg, leave-one-out and the full system, from one search per leg."""
    if system is None:
        write_json_atomic(folder / "skipped.json", {"why": "no candidate has two legs or more"})
        return
    from recall_kit import load_dataset, run_ablation

    run_ablation(config.system(system).spec(), load_dataset(graph.path("judgments") / "dataset"), k=config.depth,
                 metrics=config.metrics, out=folder / "ablation", n_resamples=config.resamples, seed=config.seed,
                 latency_sample=0, show_progress=False, primary=config.decision_metrics, executor=_executor(config))


def _executor(config: StudyConfig) -> Any:
    """`--executor` for the ablation and the sweep (their results are the same wherever tasks run)."""
    from recall_kit.measure.run.executor import make_executor

    return make_executor(config.executor, config.executor_address)


def make_sweep(config: StudyConfig, graph: StudyGraph, folder: Path) -> None:
    """`recall-kit sweep --holdout --guard`: the grid, chosen on the tuning half, reported on the held-out one."""
    if not config.sweep_system or not config.sweep_grid:
        write_json_atomic(folder / "skipped.json", {"why": "no [sweep] system and grid configured"})
        return
    from recall_kit import load_dataset, run_sweep

    run_sweep(config.system(config.sweep_system).spec(), load_dataset(graph.path("judgments") / "dataset"),
              grid=config.sweep_grid, target=config.sweep_target, k=config.depth, metrics=config.metrics,
              holdout=config.sweep_holdout, seed=config.seed, out=folder / "sweep", n_resamples=config.resamples,
              latency_sample=0, show_progress=False, guards=config.sweep_guards or None, executor=_executor(config))


def make_document(config: StudyConfig, graph: StudyGraph, folder: Path) -> None:
    """The study result (study.json) and its renderings (study.md, study.html)."""
    from recall_kit.study.collect import collect
    from recall_kit.study.document import render_html, render_markdown

    result = collect(config, graph, ablated=best_hybrid(config, graph))
    write_json_atomic(folder / "study.json", result.to_dict())
    (folder / "study.md").write_text(render_markdown(result), encoding="utf-8")
    (folder / "study.html").write_text(render_html(result), encoding="utf-8")


# -- the graph --------------------------------------------------------------------------------------


def build_graph(config: StudyConfig) -> StudyGraph:
    """The study's steps in order, each with what its fingerprint covers."""
    graph: StudyGraph
    common = {"versions": versions(), "seed": config.seed}
    names = [system.name for system in config.systems]
    scoring = {"k": config.depth, "metrics": config.metrics, "hook_k": config.hook_k}
    steps = [
        Step("corpus", [], lambda: {"store": config.store.kind, "columns": config.store.columns,
                                    "data": _hashes(_store_files(config)), **common},
             lambda folder, _: make_corpus(config, folder)),
        Step("evaluation-set", ["corpus"],
             lambda: {"queries": config.queries, "data": _hashes(_query_files(config)), "exact": config.exact,
                      "exact_options": config.exact_options, **_generate_inputs(config), **common},
             lambda folder, _: make_evaluation_set(config, graph.path("corpus"), folder)),
        Step("lint", ["evaluation-set"], lambda: dict(common),
             lambda folder, _: _make_lint(graph, folder)),
    ]
    steps += [_system_step(config, lambda: graph, "run", name, scoring, common) for name in names]
    steps += [
        Step("pool", ["evaluation-set", *(f"run/{n}" for n in names)],
             lambda: {"depth": config.pool_depth, "hook_k": config.hook_k, **common},
             lambda folder, _: make_pool(config, graph, folder)),
        Step("judgments", ["evaluation-set", "pool", *(f"run/{n}" for n in names)],
             lambda: {"judge": config.judge, "options": config.judge_options, "sample": config.sample,
                      "people": _hashes(_people(config)), **common},
             lambda folder, _: make_judgments(config, graph, folder)),
        declared("agreement", ["judgments"], AgreementReads, lambda: agreement_reads(config),
                 lambda reads, folder: write_json_atomic(folder / "agreement.json", measure_agreement(reads, graph)),
                 common),
    ]
    steps += [_system_step(config, lambda: graph, "eval", name, scoring, common) for name in names]
    evals = [f"eval/{n}" for n in names]
    steps += [
        declared("compare", evals, CompareReads, lambda: compare_reads(config),
                 lambda reads, folder: make_compare(reads, graph, folder), common),
        declared("simpler", evals, CompareReads, lambda: simpler_reads(config, graph),
                 lambda reads, folder: make_compare(reads, graph, folder), common),
        declared("bounds", ["judgments", *evals], BoundsReads, lambda: bounds_reads(config, graph),
                 lambda reads, folder: make_bounds(reads, graph, folder), common),
        Step("ablation", ["judgments"], lambda: _ablation_inputs(config, graph, scoring, common),
             lambda folder, inputs: make_ablation(config, graph, folder, inputs["chosen"]), after=evals),
        Step("sweep", ["judgments"],
             lambda: {"system": config.system(config.sweep_system).describe() if config.sweep_system else None,
                      "grid": config.sweep_grid, "holdout": config.sweep_holdout, "guards": config.sweep_guards,
                      "target": config.sweep_target, "resamples": config.resamples, **scoring, **common},
             lambda folder, _: make_sweep(config, graph, folder)),
    ]
    before = [step.name for step in steps]
    steps.append(Step("document", before, lambda: {"config": _document_inputs(config), "code": renderer_hash(),
                                                   **common},
                      lambda folder, _: make_document(config, graph, folder)))
    graph = StudyGraph(config.folder, steps)
    return graph


def _people(config: StudyConfig) -> list[Path]:
    from recall_kit.study.labels import people_files

    return people_files(config)


def _generate_inputs(config: StudyConfig) -> dict[str, Any]:
    """Model generators (and their options) in the evaluation set's fingerprint, when configured."""
    return {"generate": config.generate, "generate_options": config.generate_options} if config.generate else {}


def _system_step(config: StudyConfig, graph: Callable[[], StudyGraph], kind: str, name: str,
                 scoring: dict[str, Any], common: dict[str, Any]) -> Step:
    """run/NAME (on the evaluation set) or eval/NAME (on the judged set) for one system."""
    def inputs() -> dict[str, Any]:
        extra = {"latency_sample": config.latency_sample} if kind == "run" else {"judge": config.judge}
        return {"system": config.system(name).describe(), **scoring, **extra, **common}

    def make(folder: Path, _: dict[str, Any]) -> None:
        if kind == "run":
            make_run(config, name, graph().path("evaluation-set"), folder)
        else:
            make_eval(config, graph(), name, folder)

    needs = ["evaluation-set"] if kind == "run" else ["judgments", f"run/{name}"]
    return Step(f"{kind}/{name}", needs, inputs, make)


def _ablation_inputs(config: StudyConfig, graph: StudyGraph, scoring: dict[str, Any],
                     common: dict[str, Any]) -> dict[str, Any]:
    chosen = best_hybrid(config, graph)
    return {"chosen": chosen, "system": config.system(chosen).describe() if chosen else None,
            "resamples": config.resamples, **scoring, **common}


def _document_inputs(config: StudyConfig) -> dict[str, Any]:
    """What the document reads from study.toml beside the artefacts."""
    return {"name": config.name, "baseline": config.baseline, "hook_k": config.hook_k,
            "decision": config.decision_metrics, "exploratory": config.exploratory_metrics,
            "production": config.production, "min_queries": config.min_queries, "margin": config.margin,
            "min_kappa": config.min_kappa,
            "systems": {s.name: (s.describe(), str(s.config) if s.config else None) for s in config.systems},
            "sweep": [config.sweep_system, config.sweep_grid, config.sweep_holdout, config.sweep_guards],
            "source": str(config.source)}


def _make_lint(graph: StudyGraph, folder: Path) -> None:
    """`recall-kit dataset lint`: every stratum against its construction rule (ids only)."""
    from recall_kit.curate.lint import lint_dataset
    from recall_kit.dataset import load_dataset

    report = lint_dataset(load_dataset(graph.path("evaluation-set")))
    write_json_atomic(folder / "lint.json", report.to_dict())


