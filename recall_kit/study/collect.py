"""The study result gathered from the steps' artefacts: the evidence, then the rules and the threats.

Each summary is a function of a dataset and results (so a test can plant either); `collect` reads
the study folder and puts them together.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.study.result import HeadToHead, LegReach, StratumSummary, StudyResult, SystemSummary

if TYPE_CHECKING:
    from recall_kit import BenchmarkResult, Dataset
    from recall_kit.study.config import StudyConfig
    from recall_kit.study.graph import StudyGraph

#: z(1 - 0.05 / 2) + z(0.8): the minimum detectable delta of a paired test is this many standard
#: errors of the mean paired difference (two-sided alpha 0.05, power 0.8).
DETECTABLE_Z = 1.959964 + 0.841621

#: Exact strata: lint's kinds that break "the phrase occurs in exactly its judged memories".
EXACT_RULE_BROKEN = ("exact_not_unique", "exact_not_found")


def read_json(path: Path) -> Any:
    """A step's JSON artefact, read back."""
    return json.loads(path.read_text(encoding="utf-8"))


def relevant(dataset: Dataset, query_id: str) -> set[str]:
    return {doc for doc, grade in dataset.qrels.get(query_id, {}).items() if grade >= 1}


def minimum_detectable(baseline: Sequence[float], challenger: Sequence[float]) -> float:
    """The smallest mean paired difference a two-sided test (alpha 0.05, power 0.8) would detect
    at this many queries, from the spread of the observed paired differences (their standard
    deviation; where every difference is 0, that of the baseline's values times sqrt 2, as for
    independent values)."""
    n = len(baseline)
    if n < 2:  # (math.inf: no variation to measure it from, or too few queries)
        return math.inf
    diffs = [b - a for a, b in zip(baseline, challenger, strict=True)]

    def sd(values: Sequence[float]) -> float:
        mean = sum(values) / len(values)
        return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))

    spread = sd(diffs) or math.sqrt(2) * sd(baseline)
    return DETECTABLE_Z * spread / math.sqrt(n) if spread else math.inf


def stratum_summaries(dataset: Dataset, baseline: BenchmarkResult, challenger: BenchmarkResult | None,
                      decision: Sequence[str], built: Mapping[str, Mapping[str, Any]],
                      lint_findings: Sequence[Mapping[str, Any]]) -> list[StratumSummary]:
    """Per stratum: size, construction, label shape, lint counts and the minimum detectable deltas."""
    by_stratum: dict[str, list[str]] = {}
    for query in dataset.queries:
        by_stratum.setdefault(query.stratum, []).append(query.query_id)
    out = []
    for stratum, ids in by_stratum.items():
        lint = Counter(str(f["kind"]) for f in lint_findings if f.get("stratum") == stratum)
        how = built.get(stratum, {})
        exact_rule = stratum.startswith("exact") and not any(lint[kind] for kind in EXACT_RULE_BROKEN)
        mde = {}
        for metric in decision:
            base = baseline.per_query(metric)
            other = (challenger or baseline).per_query(metric)
            value = minimum_detectable([base[q] for q in ids], [other[q] for q in ids])
            mde[metric] = round(value, 4) if math.isfinite(value) else None
        out.append(StratumSummary(
            name=stratum, queries=len(ids), built=str(how.get("built", "supplied by the user")),
            corpus_rule=bool(how.get("generated")) or exact_rule,
            one_relevant_share=round(sum(1 for q in ids if len(relevant(dataset, q)) == 1) / len(ids), 4),
            graded_share=round(sum(1 for q in ids if any(g > 1 for g in dataset.qrels.get(q, {}).values()))
                               / len(ids), 4),
            minimum_detectable=mde, lint=dict(sorted(lint.items())),
        ))
    return out


def leg_reach(result: BenchmarkResult, hook_k: int) -> list[LegReach]:
    """For each leg of a fused system: in how many queries an id that only it found sits in the fused top k."""
    legs = result.system.legs
    if len(legs) < 2:
        return []
    reached = Counter[str]()
    for query in result.queries:
        solo = {next(iter(found)) for doc in query.ranking[:hook_k]
                if len(found := query.found_by.get(doc, {})) == 1}
        reached.update(solo)
    return [LegReach(leg=leg.name, weight=leg.weight, queries_reached=reached[leg.name], queries=result.n_queries)
            for leg in legs]


def system_summary(name: str, result: BenchmarkResult, dataset: Dataset, hook_k: int) -> SystemSummary:
    """One system's means, holes at the hook's k, first-hit shares, leg reach, latency and storage."""
    rankings = result.rankings()
    returned = [(q, doc) for q, ranking in rankings.items() for doc in ranking[:hook_k]]
    unjudged = sum(1 for q, doc in returned if doc not in dataset.qrels.get(q, {}))
    first: dict[str, list[bool]] = {}
    for query in result.queries:
        rel = relevant(dataset, query.query_id)
        if len(rel) == 1:
            first.setdefault(query.stratum, []).append(bool(query.ranking) and query.ranking[0] in rel)
    means = {"overall": dict(result.means())} | {s: dict(result.means(s)) for s in result.strata}
    models = {leg.name: str(leg.options["model"]) for leg in result.system.legs if leg.options.get("model")}
    latency = result.latency
    return SystemSummary(
        name=name, retriever=result.system.spec or "", legs=[leg.name for leg in result.system.legs],
        fusions=[step.name for step in result.system.fusion], models=models, means=means,
        unjudged_share=round(unjudged / len(returned), 4) if returned else 0.0,
        first_hit_share={s: round(sum(v) / len(v), 4) for s, v in sorted(first.items())},
        reach=leg_reach(result, hook_k),
        latency_p50_ms=latency.stat("p50") if latency.measured else None,
        latency_p95_ms=latency.stat("p95") if latency.measured else None,
        index_bytes=result.index.size_bytes, build_seconds=result.index.build_seconds,
    )


def head_to_head(rows: Sequence[Mapping[str, Any]], decision: Sequence[str], baseline: str) -> list[HeadToHead]:
    """The comparison's decision rows (every candidate, every scope): one Holm family."""
    from recall_kit.study.result import row_from_dict

    return [row_from_dict(dict(row)) for row in rows if row["metric"] in decision and row["system"] != baseline]


def ablation_summary(graph: StudyGraph, hook_k: int) -> dict[str, Any]:
    """The ablation's variants (means, deltas against the full system) and the full system's leg reach."""
    from recall_kit import load_result

    folder = graph.path("ablation")
    if (folder / "skipped.json").exists():
        return {"skipped": read_json(folder / "skipped.json")["why"]}
    index = read_json(folder / "ablation" / "ablation.json")
    full = load_result(folder / "ablation" / index["variants"][0]["file"])
    rows = [row for row in index["comparison"]["rows"] if row["scope"] == "overall" and row["family"] == "primary"]
    return {"system": index["full"],
            "variants": [{"name": v["name"], "kind": v["kind"], "means": v["overall"]} for v in index["variants"]],
            "rows": [{key: row[key] for key in ("system", "metric", "delta", "ci_low", "ci_high", "p_holm",
                                               "significant")} for row in rows],
            "reach": [vars(r) for r in leg_reach(full, hook_k)],
            "command": f"recall-kit ablate --retriever {index['full']} (see the system's options in its result)"}


def sweep_summary(graph: StudyGraph) -> dict[str, Any]:
    """The sweep's choice: the grid, the split, the best setting and its held-out comparison."""

    folder = graph.path("sweep")
    if (folder / "skipped.json").exists():
        return {"skipped": read_json(folder / "skipped.json")["why"]}
    data = read_json(folder / "sweep" / "sweep.json")
    comparison = data.get("comparison") or {}
    held_out = [{key: row[key] for key in ("system", "metric", "delta", "ci_low", "ci_high", "p_holm", "significant")}
                for row in comparison.get("rows", []) if row["scope"] == "overall"]
    return {"target": data["target"], "guards": data["guards"], "holdout": data["holdout"],
            "tuning_queries": len(data["tuning_queries"]), "test_queries": len(data["test_queries"]),
            "settings": len(data["points"]), "best": data["best"],
            "eligible": sum(1 for p in data["points"] if p["eligible"]), "held_out": held_out}


def collect(config: StudyConfig, graph: StudyGraph) -> StudyResult:
    """Read every step's artefacts into the typed study result; apply the rules; run the detectors."""
    from recall_kit import load_dataset, load_result
    from recall_kit.study.rules import recommend
    from recall_kit.study.threats import detect

    dataset = load_dataset(graph.path("judgments") / "dataset")
    results = {s.name: load_result(graph.path(f"eval/{s.name}") / "result.json") for s in config.systems}
    comparison = read_json(graph.path("compare") / "comparison.json")
    rows = head_to_head(comparison["rows"], config.decision_metrics, config.baseline)
    systems = [system_summary(name, result, dataset, config.hook_k) for name, result in results.items()]
    pool = read_json(graph.path("pool") / "pool.json")
    judgments = read_json(graph.path("judgments") / "judgments.json")
    study = StudyResult(
        name=config.name, hook_k=config.hook_k, decision_metrics=config.decision_metrics,
        exploratory_metrics=config.exploratory_metrics, baseline=config.baseline, seed=config.seed,
        resamples=config.resamples, corpus=read_json(graph.path("corpus") / "corpus.json"),
        strata=[], labels={"source": judgments["source"], "pooled_labels": judgments["pooled_labels"],
                           "pool_depth": pool["depth"], "pool_ids": pool["ids"], "pool_queries": pool["queries"],
                           **({"people": judgments["people"]} if "people" in judgments else {})},
        agreement=read_json(graph.path("agreement") / "agreement.json"), systems=systems, head_to_head=rows,
        ablation=ablation_summary(graph, config.hook_k), sweep=sweep_summary(graph),
        production=dict(config.production),
    )
    challenger = study.challenger
    study.strata = stratum_summaries(
        dataset, results[config.baseline], results[challenger] if challenger else None, config.decision_metrics,
        read_json(graph.path("evaluation-set") / "strata.json"),
        read_json(graph.path("lint") / "lint.json")["findings"])
    study.bounds = read_json(graph.path("bounds") / "bounds.json")["rows"]
    study.verdicts = recommend(study)
    study.threats, study.clear = detect(study, min_queries=config.min_queries)
    study.commands = commands(config, graph)
    study.timings = {name: round(record.seconds, 1) for name, record in graph.records.items()}
    return study


def commands(config: StudyConfig, graph: StudyGraph) -> dict[str, str]:
    """The single recall-kit command that reproduces each step's numbers, run from the study folder."""
    import os

    from recall_kit.study.config import option_flags

    data = "steps/judgments/dataset"
    metrics = ",".join(config.metrics)
    runs = " ".join(f"steps/run/{s.name}/result.json" for s in config.systems)
    evals = " ".join(f"steps/eval/{s.name}/result.json" for s in config.systems)
    out = {
        "lint": "recall-kit dataset lint steps/evaluation-set",
        "pool": f"recall-kit pool {runs} --depth {config.pool_depth} --out pool.jsonl",
        "compare": f"recall-kit compare {evals} --metrics {metrics} --primary {','.join(config.decision_metrics)} "
                   f"--bootstrap {config.resamples}",
    }
    for system in config.systems:
        how = (f"--config {os.path.relpath(system.config, graph.folder)}"
               + "".join(f" -o {flag}" for flag in system.overrides) if system.config
               else f"--retriever {system.retriever}" + "".join(f" --fusion {f}" for f in system.fusions)
               + (" --weights " + ",".join(f"{leg}={w:g}" for leg, w in system.weights.items()) if system.weights else "")
               + "".join(f" -o {flag}" for flag in option_flags(system.options)))
        out[f"eval/{system.name}"] = f"recall-kit eval --dataset {data} {how} -k {config.depth} --metrics {metrics}"
    if config.sweep_system and config.sweep_grid:
        out["sweep"] = (f"recall-kit sweep --dataset {data} (the {config.sweep_system} system) "
                        + " ".join("-g " + g for g in config.sweep_grid) + f" --target {config.sweep_target}"
                        + (f" --holdout {config.sweep_holdout}" if config.sweep_holdout else "")
                        + (f" --guard {','.join(config.sweep_guards)}" if config.sweep_guards else ""))
    return out
