"""Grid sweeps over leg weights and fusion or leg options, with an optional seeded, stratified
hold-out split so that the chosen setting is scored on queries it was not chosen on."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recall_kit.dataset import Dataset, split_queries
from recall_kit.decide.compare import ALPHA, Comparison, SavedComparison, compare_results
from recall_kit.decide.compare_report import delta_table
from recall_kit.decide.stats import holm, paired_randomisation_test
from recall_kit.document_reader import read_saved
from recall_kit.errors import OptionError
from recall_kit.fileio import atomic_batch, check_run_folder, file_name, write_json_atomic
from recall_kit.masking import mask_secrets, mask_values
from recall_kit.measure.result import BenchmarkResult
from recall_kit.measure.run import (
    Executor,
    MaxFailed,
    ScoringSettings,
    checkpoint_for,
    distinct_legs,
    score_systems,
    search_depth,
    search_legs,
)
from recall_kit.measure.score.metric_names import MetricSpec, resolve_metrics
from recall_kit.measure.systems.system import System, SystemSpec, build_system, parse_weight, split_target
from recall_kit.types import Report, ReportTable

SCHEMA = "recall-kit/sweep/1"


@dataclass(frozen=True)
class GridAxis:
    """One `--grid` entry: a leg's weight (`graph=0,1`) or an option (`rrf.k=10,60`)."""

    owner: str
    key: str | None  # None: the owner's weight
    values: tuple[Any, ...]

    @property
    def name(self) -> str:
        return self.owner if self.key is None else f"{self.owner}.{self.key}"


def parse_grid(entries: Sequence[str], spec: SystemSpec) -> list[GridAxis]:
    """`["graph=0,0.35", "rrf.k=10,60"]` -> axes, checked against the system's legs and fusions."""
    legs = spec.leg_names
    axes: list[GridAxis] = []
    for entry in entries:
        target, sep, raw = entry.partition("=")
        target = target.strip()
        values = [value.strip() for value in raw.split(",") if value.strip()]
        if not sep or not target or not values:
            raise OptionError(f"Bad --grid {entry!r}: expected LEG=v1,v2 (a weight) or NAME.KEY=v1,v2 (an option).")
        owner, key = split_target(target)
        if not owner:
            if target not in legs:
                raise OptionError(f"Bad --grid {entry!r}: {target!r} is not a leg (legs: {', '.join(legs)}).")
            weights = [parse_weight(value, f"Bad --grid {entry!r}") for value in values]
            axis = GridAxis(target, None, tuple(dict.fromkeys(weights)))
        else:
            if owner not in legs and owner not in spec.fusions:
                raise OptionError(
                    f"Bad --grid {entry!r}: {owner!r} is not a leg or fusion of this system "
                    f"(legs: {', '.join(legs)}; fusions: {', '.join(spec.fusions) or 'none'})."
                )
            axis = GridAxis(owner, key, tuple(dict.fromkeys(values)))
        if any(existing.name == axis.name for existing in axes):
            raise OptionError(f"--grid names {axis.name!r} twice.")
        axes.append(axis)
    if not axes:
        raise OptionError("Sweep needs at least one --grid.")
    return axes


def grid_specs(spec: SystemSpec, axes: Sequence[GridAxis]) -> list[tuple[dict[str, Any], SystemSpec]]:
    """Every combination of the axes' values, as (settings, spec), in grid order."""
    out = []
    for combination in itertools.product(*(axis.values for axis in axes)):
        weights = dict(spec.weights)
        options = {name: dict(values) for name, values in spec.options.items()}
        settings: dict[str, Any] = {}
        for axis, value in zip(axes, combination, strict=True):
            settings[axis.name] = value
            if axis.key is None:
                weights[axis.owner] = value
            else:
                options.setdefault(axis.owner, {})[axis.key] = value
        out.append((settings, SystemSpec(spec.retriever, list(spec.fusions), weights, options)))
    return out


@dataclass(frozen=True)
class GuardCheck:
    """A setting against the default on one guard metric, on the tuning half."""

    delta: float
    p_value: float
    #: Holm-adjusted within the setting's guards.
    p_holm: float

    @property
    def fails(self) -> bool:
        return self.delta < 0 and self.p_holm < ALPHA

    def __str__(self) -> str:
        return f"{self.delta:+.4f} (Holm p {self.p_holm:.3g})" + (" FAIL" if self.fails else "")


def guard_checks(
    default: BenchmarkResult,
    result: BenchmarkResult,
    guards: Sequence[str],
    query_ids: Sequence[str],
    n_resamples: int,
    seed: int,
) -> dict[str, GuardCheck]:
    """`result` against `default` on each guard over `query_ids`: paired delta, two-sided paired
    randomisation p, Holm-adjusted within the guards (the family of one setting's guard tests)."""
    if not guards:
        return {}
    deltas, p_values = [], []
    for guard in guards:
        a = np.array([default.per_query(guard)[q] for q in query_ids], dtype=np.float64)
        b = np.array([result.per_query(guard)[q] for q in query_ids], dtype=np.float64)
        deltas.append(float((b - a).mean()) if query_ids else 0.0)
        p_values.append(paired_randomisation_test(a, b, n_resamples, seed).p_value if query_ids else 1.0)
    return {guard: GuardCheck(delta, p, adjusted)
            for guard, delta, p, adjusted in zip(guards, deltas, p_values, holm(p_values), strict=True)}


@dataclass
class SweepPoint:
    settings: dict[str, Any]
    spec: SystemSpec
    result: BenchmarkResult
    tuning_score: float
    test_score: float | None = None
    file: str | None = None
    #: guard metric -> its check against the default on the tuning half (empty: no guards).
    guard_checks: dict[str, GuardCheck] = field(default_factory=dict)

    @property
    def eligible(self) -> bool:
        """Not significantly worse than the default on any guard (on the tuning half)."""
        return not any(check.fails for check in self.guard_checks.values())

    @property
    def label(self) -> str:
        return _setting_label(self.settings)


@dataclass
class Sweep:
    target: str
    points: list[SweepPoint]
    default: SweepPoint
    best: SweepPoint
    holdout: float | None
    seed: int
    tuning_ids: list[str]
    test_ids: list[str]
    comparison: Comparison | None
    leg_searches: int
    skipped: list[str] = field(default_factory=list)
    stratum: str | None = None
    #: Guard metrics: a setting is eligible only if not significantly worse than the default on each.
    guards: list[str] = field(default_factory=list)

    @property
    def goal(self) -> str:
        """The target as the tables name it: the metric, and the stratum when scored on one."""
        return f"{self.target} on {self.stratum}" if self.stratum else self.target

    def notes(self) -> list[str]:
        scope = ([f"The target is scored on the {self.stratum} stratum's queries only."] if self.stratum else [])
        if self.holdout is None:
            return scope + [(
                f"The best {self.goal} ({self.best.tuning_score:.4f}) is optimistic: the setting was chosen "
                "and scored on the same queries. Use --holdout 0.5 to score it on queries it was not chosen on."
            )]
        return scope + self.guard_notes() + [(
            f"Chosen on {len(self.tuning_ids)} tuning queries; scored on {len(self.test_ids)} held-out test "
            f"queries (split stratified by stratum, seed {self.seed}). Only the test-half numbers estimate how "
            "the setting does on new queries."
        )]

    def guard_notes(self) -> list[str]:
        """What the guards did: which settings they ruled out, and whether any was left."""
        if not self.guards:
            return []
        barred = [p.label for p in self.points if not p.eligible]
        notes = [(
            f"Guards {', '.join(self.guards)}: a setting is eligible only if, on the tuning queries, it is not "
            f"significantly worse than the default on any of them (paired randomisation test; each cell's Holm p "
            f"is adjusted within that setting's {len(self.guards)} guards, p < {ALPHA}); {len(barred)} of "
            f"{len(self.points)} settings ruled out."
        )]
        if not any(p.eligible for p in self.points):
            notes.append("No setting passed the guards: the best on the target is shown, and it costs a guard "
                         "metric; keep the default unless that trade is wanted.")
        return notes

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "target": self.target,
            "guards": self.guards,
            "stratum": self.stratum,
            "dataset": self.default.result.dataset.to_dict(),
            "holdout": self.holdout,
            "seed": self.seed,
            "tuning_queries": self.tuning_ids,
            "test_queries": self.test_ids,
            "leg_searches": self.leg_searches,
            "points": [
                {"settings": mask_values(p.settings), "spec": p.spec.to_dict(), "file": p.file,
                 "tuning_score": p.tuning_score, "test_score": p.test_score, "overall": p.result.summary_document(),
                 "guards": {g: {"delta": c.delta, "p_value": c.p_value, "p_holm": c.p_holm, "fails": c.fails}
                            for g, c in p.guard_checks.items()},
                 "eligible": p.eligible}
                for p in self.points
            ],
            "default": {"spec": self.default.spec.to_dict(), "file": self.default.file,
                        "tuning_score": self.default.tuning_score, "test_score": self.default.test_score},
            "best": {"settings": mask_values(self.best.settings), "tuning_score": self.best.tuning_score,
                     "test_score": self.best.test_score},
            "comparison": self.comparison.to_dict() if self.comparison else None,
            "skipped": self.skipped,
            "notes": self.notes(),
        }

    def report(self) -> Report:
        held = self.holdout is not None
        score_header = f"{self.goal} (tuning)" if held else f"{self.goal} (all queries)"
        headers = ["rank", "setting", score_header] + ([f"{self.goal} (test)"] if held else [])
        headers += [f"{guard} vs default (tuning)" for guard in self.guards]
        ranked = sorted(self.points, key=lambda p: -p.tuning_score)
        rows = []
        for rank, point in enumerate(ranked, start=1):
            row: list[Any] = [rank, point.label + (" (best)" if point is self.best else ""),
                              f"{point.tuning_score:.4f}"]
            if held:
                row.append(f"{point.test_score:.4f}")
            row += [str(point.guard_checks[guard]) for guard in self.guards]
            rows.append(row)
        default_row: list[Any] = ["", "default (as given, without the grid)", f"{self.default.tuning_score:.4f}"]
        if held:
            default_row.append(f"{self.default.test_score:.4f}")
        default_row += [""] * len(self.guards)
        rows.append(default_row)
        tables = [ReportTable(
            title=f"Sweep of {self.default.spec.label} on {self.goal} ({len(self.points)} settings, "
                  f"{self.leg_searches} leg searches)",
            headers=headers, rows=rows, notes=self.notes(),
        )]
        if self.comparison is not None:
            tables.append(delta_table(
                self.comparison, self.comparison.labels[1],
                title=f"Best setting vs default on the {len(self.test_ids)} held-out test queries",
            ))
        charts = [{"kind": "bar", "title": f"{self.goal} per setting ({'tuning half' if held else 'all queries'})",
                   "groups": {p.label: {self.target: p.tuning_score} for p in ranked}, "y_label": self.target}]
        notes = list(self.skipped) + (list(self.comparison.warnings) if self.comparison else [])
        return Report(title=f"recall-kit sweep: {self.default.spec.retriever}", tables=tables, notes=notes,
                      data=self.to_dict(), charts=charts)


def _setting_label(settings: dict[str, Any]) -> str:
    """`name=value ...` as a table, a progress line or a file name shows it: secrets masked (a DSN
    given as a grid value)."""
    return mask_secrets(" ".join(f"{name}={value}" for name, value in settings.items())) or "default"


def _mean(result: BenchmarkResult, metric: str, ids: Sequence[str]) -> float:
    values = result.per_query(metric)
    return float(np.mean([values[q] for q in ids])) if ids else 0.0


def _metric_names(
    target: str, metrics: Sequence[str] | None, guards: Sequence[str] | None
) -> tuple[MetricSpec, list[str], list[str]]:
    """The target's metric, every metric name to score (the target first where not named, the
    guards last) and the guards' names; a guard that names the target is refused."""
    target_spec = resolve_metrics([target])[0]
    names = [s.name for s in resolve_metrics(metrics)]
    if target_spec.name not in names:
        names.insert(0, target_spec.name)
    guard_names = [s.name for s in resolve_metrics(list(guards))] if guards else []
    if target_spec.name in guard_names:
        raise OptionError(f"--guard names the target {target_spec.name!r}: guards are the other metrics to protect.")
    names += [g for g in guard_names if g not in names]
    return target_spec, names, guard_names


def _query_halves(
    dataset: Dataset, holdout: float | None, seed: int, stratum: str | None
) -> tuple[list[str], list[str]]:
    """The tuning and test query ids (all queries and none without `holdout`), only `stratum`'s with one."""
    tuning_ids, test_ids = (split_queries(dataset, holdout, seed) if holdout is not None
                            else ([q.query_id for q in dataset.queries], []))
    if stratum is not None:
        strata = {q.query_id: q.stratum for q in dataset.queries}
        if stratum not in set(strata.values()):
            raise OptionError(f"--stratum {stratum!r}: no query has it (strata: {', '.join(sorted(set(strata.values())))}).")
        tuning_ids = [q for q in tuning_ids if strata[q] == stratum]
        test_ids = [q for q in test_ids if strata[q] == stratum]
    return tuning_ids, test_ids


def _buildable_systems(
    spec: SystemSpec, axes: list[GridAxis]
) -> tuple[list[tuple[dict[str, Any], SystemSpec, System]], list[str]]:
    """The default and every grid setting, built (settings, spec, system); those whose every leg has
    weight 0 are left out, each with a note."""
    configurations: list[tuple[dict[str, Any], SystemSpec]] = [({}, spec), *grid_specs(spec, axes)]
    skipped: list[str] = []
    systems: list[tuple[dict[str, Any], SystemSpec, System]] = []
    for settings, config in configurations:
        legs = config.leg_names
        if len(legs) > 1 and all(config.weights.get(leg, 1.0) == 0 for leg in legs):
            skipped.append(f"Setting {mask_values(settings)} skipped: every leg has weight 0.")
            continue
        systems.append((settings, config, build_system(config)))
    return systems, skipped


def _sweep_points(
    systems: list[tuple[dict[str, Any], SystemSpec, System]],
    results: list[BenchmarkResult],
    target: str,
    tuning_ids: list[str],
    test_ids: list[str],
) -> tuple[SweepPoint, list[SweepPoint]]:
    """Each setting's point (the default's apart) scored on `target` over the tuning and test halves."""
    points: list[SweepPoint] = []
    default_point: SweepPoint | None = None
    for (settings, config, _), result in zip(systems, results, strict=True):
        point = SweepPoint(settings, config, result, _mean(result, target, tuning_ids),
                           _mean(result, target, test_ids) if test_ids else None)
        if not settings:
            default_point = point
        else:
            points.append(point)
    if default_point is None:
        raise OptionError("The default system (as given, without the grid) cannot run: every leg has weight 0.")
    if not points:
        raise OptionError("Every grid setting was skipped.")
    return default_point, points


def _save_sweep(folder: Path, sweep: Sweep, files: list[str], replaced: list[Path]) -> None:
    """Every setting's result and sweep.json into `folder`, all or none; a replaced run's files removed first."""
    default_point, points = sweep.default, sweep.points
    for path in replaced:
        path.unlink(missing_ok=True)
    with atomic_batch():  # every file or none: an interrupted run leaves no partial set
        default_point.file = files[0]
        default_point.result.save(folder / default_point.file)
        for index, point in enumerate(points, start=1):
            point.file = files[index]
            point.result.save(folder / point.file)
        write_json_atomic(folder / "sweep.json", sweep.to_dict())


def run_sweep(
    spec: SystemSpec,
    dataset: Dataset,
    grid: Sequence[str],
    target: str,
    k: int = 20,
    metrics: Sequence[str] | None = None,
    holdout: float | None = None,
    seed: int = 0,
    out: str | Path | None = None,
    n_resamples: int = 10_000,
    latency_sample: int | None = 200,
    show_progress: bool | None = None,
    stratum: str | None = None,
    force: bool = False,
    executor: Executor | None = None,
    guards: Sequence[str] | None = None,
    relevance_level: int = 1,
    judged_only: bool = False,
    max_failed: MaxFailed | None = None,
) -> Sweep:
    """Score every grid setting, re-fusing shared leg runs; choose the best on `target`.

    With `stratum`, the target (tuning, test and the comparison) is the mean over that stratum's
    queries only; the split is the same stratified split either way.

    Each distinct leg configuration is searched once (a grid over a leg's own option searches
    that leg once per value). With `holdout`, the best is chosen on the tuning queries and
    reported, against the default, on the held-out test queries.

    With `out`, a folder holding another run's files is refused before any search (`force`:
    that run's files are replaced once this one is done).
    `executor` runs the leg searches and the settings' scoring (default: one after another in this
    process; `RayExecutor` on a cluster); the results are the same either way.
    With `guards` (metrics such as ndcg@10 and mrr), a setting is eligible only if, on the
    tuning queries, it is not significantly worse than the default on any guard (two-sided paired
    randomisation test, Holm within the guards, p < 0.05): a sweep on one metric cannot then buy
    it with another. The held-out comparison reports the guards' deltas too.
    `relevance_level` and `judged_only` are trec_eval's ``-l`` and ``-J``, as in `run_benchmark`,
    the same for every setting.
    """
    axes = parse_grid(grid, spec)
    target_spec, names, guard_names = _metric_names(target, metrics, guards)
    settings = ScoringSettings.of(k, names, relevance_level, judged_only, latency_sample, seed, max_failed)
    tuning_ids, test_ids = _query_halves(dataset, holdout, seed, stratum)
    systems, skipped = _buildable_systems(spec, axes)
    files = _setting_files(systems)
    replaced = check_run_folder(out, files, "sweep.json", force) if out is not None else []
    checkpoint = checkpoint_for(out)
    results, leg_searches = _score_grid(systems, dataset, k, names, settings, executor, show_progress, checkpoint)
    default_point, points = _sweep_points(systems, results, target_spec.name, tuning_ids, test_ids)
    best, comparison = _choose_best(default_point, points, target_spec.name, guard_names, tuning_ids, test_ids,
                                    holdout, n_resamples, seed)
    sweep = Sweep(target=target_spec.name, points=points, default=default_point, best=best, holdout=holdout,
                  seed=seed, tuning_ids=tuning_ids, test_ids=test_ids, comparison=comparison,
                  leg_searches=leg_searches, skipped=skipped, stratum=stratum, guards=guard_names)
    if out is not None:
        _save_sweep(Path(out), sweep, files, replaced)
        if checkpoint is not None:
            checkpoint.clear()
    return sweep


def _setting_files(systems: Sequence[tuple[dict[str, Any], SystemSpec, System]]) -> list[str]:
    """Each setting's result file: default.json for the default, then 001_<setting>.json, ...
    (secrets in a setting masked)."""
    return ["default.json" if not settings else f"{index:03d}_" + file_name(mask_secrets(",".join(f"{n}={v}" for n, v in settings.items())))
            for index, (settings, _, _) in enumerate(systems)]


def _score_grid(systems: Sequence[tuple[dict[str, Any], SystemSpec, System]], dataset: Dataset, k: int, names: list[str],
                settings: ScoringSettings, executor: Executor | None, show_progress: bool | None,
                checkpoint: Any) -> tuple[list[BenchmarkResult], int]:
    """Every setting's result, and how many leg searches they took: one search per distinct leg
    configuration, as deep as any setting needs."""
    # Each setting's depth, worked out once: its legs search it, its scoring cuts their runs to it.
    deep = [(_setting_label(settings), system, search_depth(system, dataset, k, names)) for settings, _, system in systems]
    leg_by_key, depths = distinct_legs([(system, depth) for _, system, depth in deep])
    # The independent work (each leg search, then each setting's fusion and scoring) goes to the
    # executor; with --out-dir each finished task is kept, so a rerun does only what is missing.
    runs_by_key = search_legs(executor, dataset, leg_by_key, depths, settings.latency_sample, show_progress, checkpoint)
    return score_systems(executor, dataset, deep, runs_by_key, settings, show_progress, checkpoint), len(runs_by_key)


def _choose_best(default_point: SweepPoint, points: list[SweepPoint], target: str, guard_names: list[str],
                 tuning_ids: list[str], test_ids: list[str], holdout: float | None, n_resamples: int,
                 seed: int) -> tuple[SweepPoint, Comparison | None]:
    """The best eligible setting on the tuning queries (ties: the first in grid order; every setting
    when none is eligible) and, with a hold-out, its comparison with the default on the test queries."""
    for point in points:
        point.guard_checks = guard_checks(default_point.result, point.result, guard_names, tuning_ids,
                                          n_resamples, seed)
    eligible = [p for p in points if p.eligible] or points
    best = max(eligible, key=lambda p: p.tuning_score)  # ties: the first in grid order
    comparison = None
    if holdout is not None:
        comparison = compare_results(
            [("default", default_point.result), (f"best ({best.label})", best.result)],
            metrics=[target, *guard_names], n_resamples=n_resamples, seed=seed, query_subset=test_ids,
            primary=[target],
        )
    return best, comparison


__all__ = ["ALPHA", "GridAxis", "GuardCheck", "Sweep", "SweepPoint", "grid_specs", "parse_grid", "run_sweep"]


# -- a saved sweep, read back (what Sweep.to_dict writes) ----------------------------------------------

@dataclass(frozen=True)
class SavedSweep:
    """A saved `sweep` document (sweep.json): the grid's outcome and the best setting's held-out comparison."""

    target: str
    guards: list[str]
    holdout: float | None
    tuning_queries: int
    test_queries: int
    settings: int
    eligible: int
    best_settings: dict[str, str]
    best_tuning_score: float
    best_test_score: float | None
    comparison: SavedComparison | None

    @classmethod
    def load(cls, path: str | Path) -> SavedSweep:
        return read_saved(path, cls.from_dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SavedSweep:
        best = data["best"]
        return cls(target=str(data["target"]), guards=[str(g) for g in data.get("guards") or []],
                   holdout=data.get("holdout"), tuning_queries=len(data["tuning_queries"]),
                   test_queries=len(data["test_queries"]), settings=len(data["points"]),
                   eligible=sum(1 for point in data["points"] if point.get("eligible")),
                   best_settings={str(k): str(v) for k, v in best["settings"].items()},
                   best_tuning_score=float(best["tuning_score"]),
                   best_test_score=None if best.get("test_score") is None else float(best["test_score"]),
                   comparison=SavedComparison.from_dict(data["comparison"]) if data.get("comparison") else None)
