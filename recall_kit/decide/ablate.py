"""Ablation of a fused system: every single leg, every leave-one-out, and the full system, scored
from one search per leg (the variants re-fuse the same leg runs) and compared with the full system."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.dataset import Dataset
from recall_kit.decide.compare import ALPHA, DIAGNOSTIC, Comparison, SavedComparison, compare_results
from recall_kit.decide.compare_report import family_note, holm_p, tradeoffs
from recall_kit.document_reader import read_saved
from recall_kit.errors import SpecError
from recall_kit.fileio import atomic_batch, check_run_folder, file_name, write_json_atomic
from recall_kit.measure.result import BenchmarkResult
from recall_kit.measure.result_report import attribution_table, scoring_notes
from recall_kit.measure.run import (
    Executor,
    MaxFailed,
    ScoringSettings,
    checkpoint_for,
    leg_key,
    score_systems,
    search_depth,
    search_legs,
)
from recall_kit.measure.systems.system import System, SystemSpec, build_system
from recall_kit.types import Report, ReportTable

SCHEMA = "recall-kit/ablation/1"


@dataclass
class Variant:
    name: str
    kind: str  # "full", "leave-one-out" or "single leg"
    legs: list[str]
    result: BenchmarkResult
    file: str | None = None


@dataclass
class Ablation:
    full: str
    variants: list[Variant]
    comparison: Comparison
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        full = self.variants[0].result
        return {
            "schema": SCHEMA,
            "full": self.full,
            "dataset": full.dataset.to_dict(),
            "k": full.k,
            "variants": [
                {"name": v.name, "kind": v.kind, "legs": v.legs, "file": v.file,
                 "overall": v.result.summary_document(), "warnings": v.result.warnings}
                for v in self.variants
            ],
            "attribution": {leg: counts.to_dict() for leg, counts in full.attribution.items()},
            "skipped": self.skipped,
            "comparison": self.comparison.to_dict(),
        }

    def report(self, brief: bool = False) -> Report:
        """The ablation table, what each leg contributed and (unless `brief`) every variant's
        paired comparison with the full system."""
        from recall_kit.decide.compare_report import delta_table

        metrics = self.comparison.metrics
        headers = ["variant", "kind"]
        for metric in metrics:
            headers += [metric, f"delta {metric}"]
        rows = []
        for variant in self.variants:
            row: list[Any] = [variant.name, variant.kind]
            for metric in metrics:
                row.append(f"{variant.result.mean(metric):.4f}")
                if variant.kind == "full":
                    row.append("")
                else:
                    c = self.comparison.row(variant.name, metric, "overall")
                    if c.family == DIAGNOSTIC:
                        row.append(f"{c.delta:+.4f} (not tested)")
                    else:
                        row.append(f"{c.delta:+.4f}" + ("" if c.significant else " (ns)"))
            rows.append(row)
        summary = ReportTable(
            title=f"Ablation of {self.full} (all queries)",
            headers=headers,
            rows=rows,
            notes=[(f"delta = variant - full system; (ns): not significant (paired randomisation p, Holm-adjusted "
                    f"within its family, >= {ALPHA}); single legs are unfused; every variant re-fuses the same "
                    "leg runs."), family_note(self.comparison), *scoring_notes(self.variants[0].result),
                   *(f"Verdict: {line}" for line in tradeoffs(self.comparison))],
        )
        tables = [summary]
        full = self.variants[0].result
        attribution = attribution_table(full)
        if attribution is not None:
            attribution.title = f"What each leg contributed to {self.full}"
            tables.append(attribution)
        if not brief:
            tables += [delta_table(self.comparison, v.name, title=f"{v.name} vs {self.full} (full system)")
                       for v in self.variants[1:]]
        from recall_kit.measure.run import merge_leg_warnings

        notes = list(self.comparison.warnings)  # a leg above several hybrids: one warning, not one each
        notes += merge_leg_warnings([(variant.name, warning) for variant in self.variants
                                     for warning in variant.result.warnings])
        notes += self.skipped
        from recall_kit.decide.compare_report import comparison_charts

        return Report(title=f"recall-kit ablate: {self.full}", tables=tables, notes=notes,
                      data=self.to_dict(), charts=comparison_charts(self.comparison), summary=self.verdict())

    def verdict(self) -> list[str]:
        """The answer first, on the decision metric over all queries: does any variant beat the full
        system by a margin the paired test supports (Holm), and which legs cost it when removed."""
        comparison = self.comparison
        metric = comparison.primary[0] if comparison.primary else comparison.metrics[0]
        full = self.variants[0].result.mean(metric)
        rows = [comparison.row(v.name, metric, "overall") for v in self.variants[1:]]
        rows = [row for row in rows if row.family != DIAGNOSTIC]
        if not rows:
            return []
        best = max(rows, key=lambda row: row.delta)

        def shown(row: Any) -> str:
            p = "" if row.p_holm is None else f", {holm_p(comparison, row)}"
            return f"{row.value:.4f}, {row.delta:+.4f} [{row.ci_low:+.4f}, {row.ci_high:+.4f}]{p}"

        if best.significant and best.delta > 0:
            lines = [f"Verdict on {metric}: {best.system} beats the full system {self.full} ({full:.4f}): "
                     f"{shown(best)}. The full system does not earn all its legs on this data."]
        elif best.delta > 0:
            lines = [f"Verdict on {metric}: no variant beats the full system {self.full} ({full:.4f}) by a margin "
                     f"the test supports; the best, {best.system} ({shown(best)}), is within the noise."]
        else:
            lines = [f"Verdict on {metric}: the full system {self.full} ({full:.4f}) scores highest; no variant "
                     "comes above it."]
        costly = [row for row in rows if row.significant and row.delta < 0
                  and next(v for v in self.variants if v.name == row.system).kind == "leave-one-out"]
        if costly:
            lines.append("Removing a leg costs, significantly: " + "; ".join(
                f"without {', '.join(sorted(set(self.variants[0].legs) - set(self._legs(row.system))))} "
                f"{row.delta:+.4f}" for row in costly) + ".")
        return lines

    def _legs(self, name: str) -> list[str]:
        return next(v.legs for v in self.variants if v.name == name)


def ablation_variants(results: Sequence[BenchmarkResult]) -> list[tuple[str, str, list[str]]] | None:
    """(name, kind, legs) of each result when the results are an ablation's variants, as `ablate`
    writes them: the first a system of two legs or more, every other a distinct proper subset of its
    legs (a leave-one-out or a single leg), each named by its legs as `ablate` names it; None for any
    other set. `compare` on an ablation's files thus leads with ablate's own verdict."""
    specs = [result.system.spec for result in results]
    if len(specs) < 2 or any(not spec for spec in specs):
        return None
    legs = [str(spec).split("+") for spec in specs]
    kinds = {tuple(variant): kind for kind, variant in variant_legs(legs[0])} if len(legs[0]) > 1 else {}
    if len({tuple(variant) for variant in legs}) != len(legs) or any(tuple(v) not in kinds for v in legs):
        return None
    if kinds[tuple(legs[0])] != "full":
        return None
    return [(str(spec), kinds[tuple(variant)], variant) for spec, variant in zip(specs, legs, strict=True)]


def variant_legs(legs: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(kind, legs) of every variant: the full system, leave-one-outs (3+ legs), single legs."""
    out: list[tuple[str, list[str]]] = [("full", list(legs))]
    if len(legs) > 2:
        out += [("leave-one-out", [leg for leg in legs if leg != left]) for left in legs]
    out += [("single leg", [leg]) for leg in legs]
    return out


def run_ablation(
    spec: SystemSpec,
    dataset: Dataset,
    k: int = 20,
    metrics: Sequence[str] | None = None,
    out: str | Path | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
    latency_sample: int | None = 200,
    show_progress: bool | None = None,
    primary: Sequence[str] | None = None,
    relevance_level: int = 1,
    judged_only: bool = False,
    force: bool = False,
    executor: Executor | None = None,
    max_failed: MaxFailed | None = None,
) -> Ablation:
    """Search once per leg, then score and compare every variant of the system with the full one.

    `primary` names the decision metrics of the comparisons, as in `compare_results` (default:
    the first metric that is not a diagnostic); `relevance_level` and `judged_only` are trec_eval's
    ``-l`` and ``-J``, as in `run_benchmark`, the same for every variant.

    With `out`, each variant's result JSON (with its manifest) and an `ablation.json` index are
    written there, so every number in the table can be reproduced with `eval` and `compare`; a
    folder holding another run's files is refused before any search (`force`: replaced after).
    `executor` runs the leg searches and the variants' scoring (see `recall_kit.measure.run.executor`).
    """
    if len(spec.leg_names) < 2:
        raise SpecError(f"Ablate needs a system of two legs or more, got {spec.retriever!r}.")
    full_system = build_system(spec)
    files = [file_name("+".join(legs)) for _, legs in variant_legs(spec.leg_names)]  # each variant's retriever
    replaced = check_run_folder(out, files, "ablation.json", force) if out is not None else []
    settings = ScoringSettings.of(k, metrics, relevance_level, judged_only, latency_sample, seed, max_failed)
    depth = search_depth(full_system, dataset, k, metrics)
    # Each leg searched once, then every variant fused and scored: independent tasks for `executor`
    # (default: in turn, in this process); with `out`, finished tasks are kept for a rerun.
    checkpoint = checkpoint_for(out)
    legs = {leg_key(leg): leg for leg in full_system.legs}
    runs = search_legs(executor, dataset, legs, dict.fromkeys(legs, depth), settings.latency_sample, show_progress,
                       checkpoint)
    chosen: list[tuple[str, str, list[str], System]] = []
    skipped: list[str] = []
    for kind, leg_names in variant_legs(spec.leg_names):
        # Built once: every variant is made of the full system's legs and fusions, as built.
        part = full_system if kind == "full" else full_system.subset(leg_names)
        if len(leg_names) > 1 and all(leg.weight == 0 for leg in part.legs):
            skipped.append(f"{part.spec.retriever}: skipped, every leg has weight 0.")
            continue
        chosen.append((part.spec.retriever, kind, list(leg_names), part))
    results = score_systems(executor, dataset,
                            [(name, system, search_depth(system, dataset, k, metrics)) for name, _, _, system in chosen],
                            runs, settings, show_progress, checkpoint)
    variants = [Variant(name, kind, leg_names, result)
                for (name, kind, leg_names, _), result in zip(chosen, results, strict=True)]
    # Every variant was scored with the same metrics: compare them all.
    comparison = compare_results([(v.name, v.result) for v in variants], n_resamples=n_resamples, seed=seed,
                                 primary=primary)
    ablation = Ablation(full=spec.retriever, variants=variants, comparison=comparison, skipped=skipped)
    if out is not None:
        folder = Path(out)
        for path in replaced:
            path.unlink(missing_ok=True)
        with atomic_batch():  # every file or none: an interrupted run leaves no partial set
            for variant in variants:
                variant.file = file_name(variant.name)
                variant.result.save(folder / variant.file)
            write_json_atomic(folder / "ablation.json", ablation.to_dict())
        if checkpoint is not None:
            checkpoint.clear()
    return ablation


# -- a saved ablation, read back (what Ablation.to_dict writes) ----------------------------------------

@dataclass(frozen=True)
class SavedVariant:
    """One variant of a saved ablation: its legs and its overall means."""

    name: str
    kind: str
    legs: list[str]
    file: str | None
    means: dict[str, float]


@dataclass(frozen=True)
class SavedAblation:
    """A saved `ablate` document (ablation.json): the full system first, then each variant."""

    full: str
    variants: list[SavedVariant]
    comparison: SavedComparison

    @classmethod
    def load(cls, path: str | Path) -> SavedAblation:
        return read_saved(path, cls.from_dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SavedAblation:
        return cls(full=str(data["full"]),
                   variants=[SavedVariant(name=str(v["name"]), kind=str(v["kind"]), legs=[str(x) for x in v["legs"]],
                                          file=v.get("file"), means={str(m): float(x) for m, x in v["overall"].items()
                                                                    if isinstance(x, int | float)})
                             for v in data["variants"]],
                   comparison=SavedComparison.from_dict(data["comparison"]))
