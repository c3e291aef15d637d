"""A regression gate for CI: did the current result fall below the baseline by more than allowed?"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.decide.compare import ALPHA, Comparison, compare_results, is_diagnostic, shared_metrics
from recall_kit.errors import OptionError
from recall_kit.measure.result import load_results
from recall_kit.measure.run import refuse_failed_results
from recall_kit.types import Report, ReportTable

SCHEMA = "recall-kit/gate/1"
LATENCY_STATS = ("p50", "p95", "p99", "mean")


@dataclass
class GateCheck:
    """One thing the gate looked at, and whether it regressed."""

    what: str
    scope: str
    baseline: float
    current: float
    change: float
    allowed: float
    regressed: bool
    p_holm: float | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class GateOutcome:
    checks: list[GateCheck]
    settings: dict[str, Any]
    comparison: Comparison
    warnings: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not any(check.regressed for check in self.checks)

    @property
    def regressions(self) -> list[GateCheck]:
        return [check for check in self.checks if check.regressed]

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "passed": self.passed, "settings": self.settings,
                "checks": [check.to_dict() for check in self.checks], "warnings": self.warnings}

    def report(self) -> Report:
        def row(check: GateCheck) -> list[Any]:
            if check.note == "relative rise":  # latency: milliseconds, and its rise as a percentage
                return [check.what, check.scope, f"{check.baseline:.2f}", f"{check.current:.2f}",
                        f"{check.change:+.1%}", f"{check.allowed:.1%}", "",
                        "REGRESSED" if check.regressed else "ok", check.note]
            return [check.what, check.scope, f"{check.baseline:.4f}", f"{check.current:.4f}",
                    f"{check.change:+.4f}", f"{check.allowed:.4f}",
                    "" if check.p_holm is None else f"{check.p_holm:.4f}",
                    "REGRESSED" if check.regressed else "ok", check.note]

        headers = ["check", "scope", "accepted", "current", "change", "allowed",
                   "p (Holm)", "verdict", "note"]
        unit = "relative to the accepted value" if self.settings["relative"] else "absolute"
        notes = [(f"change = current - accepted, as in compare (for a metric: {unit}, a drop is "
                  f"negative and fails below -allowed; for latency: relative change of "
                  f"{self.settings['latency_stat']}, failing above +allowed).")]
        if self.settings["significant"]:
            tested = sum(1 for check in self.checks if check.p_holm is not None)
            notes.append(f"--significant: a drop fails only when the paired randomisation test, Holm-adjusted "
                         f"over the {tested} gated rows (one family), gives p < {ALPHA}.")
        tables = []
        if self.regressions:
            tables.append(ReportTable(title="Regressions", headers=headers,
                                      rows=[row(c) for c in self.regressions], notes=notes))
        tables.append(ReportTable(title="All checks", headers=headers, rows=[row(c) for c in self.checks],
                                  notes=[] if self.regressions else notes))
        verdict = "FAILED" if not self.passed else "passed"
        return Report(title=f"recall-kit gate: {verdict}", tables=tables,
                      notes=list(self.warnings), data=self.to_dict())


def run_gate(
    baseline: str | Path,
    current: str | Path,
    max_drop: float = 0.02,
    relative: bool = False,
    metrics: Sequence[str] | None = None,
    latency_max_rise: float | None = None,
    latency_stat: str = "p95",
    significant: bool = False,
    per_stratum: bool = False,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> GateOutcome:
    """Check `current` against `baseline`: every metric (overall, and per stratum when asked)
    may drop by at most `max_drop` (absolute, or a share of the baseline with `relative`), and
    the latency statistic may rise by at most `latency_max_rise` (a share) when one is given.
    """
    # NaN compares false with everything: a NaN threshold would pass every regression.
    if not math.isfinite(max_drop) or max_drop < 0:
        raise OptionError(f"--max-drop must be a finite number >= 0, got {max_drop}.")
    if latency_max_rise is not None and (not math.isfinite(latency_max_rise) or latency_max_rise < 0):
        raise OptionError(f"--latency-max-rise must be a finite number >= 0, got {latency_max_rise}.")
    if latency_stat not in LATENCY_STATS:
        raise OptionError(f"--latency-stat must be one of {', '.join(LATENCY_STATS)}, got {latency_stat!r}.")
    named = load_results([baseline, current])
    refuse_failed_results(named)  # a failed query is an outage, not a regression (nor a pass)
    # Every gated metric is a decision: Holm runs over all the gated rows (strata included).
    gated = shared_metrics(named, metrics)
    comparison = compare_results(named, metrics=metrics, n_resamples=n_resamples, seed=seed,
                                 strata=per_stratum, primary=[m for m in gated if not is_diagnostic(m)],
                                 primary_strata=True)
    checks = []
    for row in comparison.rows:
        # current - baseline, as compare reports it: a drop is negative.
        if relative:
            change = (row.value - row.baseline) / row.baseline if row.baseline > 0 else 0.0
        else:
            change = row.value - row.baseline
        over = change < -max_drop - 1e-12
        note = ""
        if over and significant and not (row.significant and row.delta < 0):
            over = False
            note = "drop not tested (diagnostic)" if row.p_holm is None else "drop not significant"
        checks.append(GateCheck(what=row.metric, scope=row.scope, baseline=row.baseline, current=row.value,
                                change=change, allowed=max_drop, regressed=over, p_holm=row.p_holm,
                                note=note))
    warnings = list(comparison.warnings)
    if latency_max_rise is not None:
        base_latency = named[0][1].latency
        cur_latency = named[1][1].latency
        before, after = base_latency.stat(latency_stat), cur_latency.stat(latency_stat)
        if not base_latency.measured or not cur_latency.measured:
            warnings.append("Latency not checked: a result holds no timed queries (--latency-sample 0).")
        else:
            rise = (after - before) / before if before > 0 else 0.0
            checks.append(GateCheck(what=f"latency {latency_stat} ms", scope="overall", baseline=before,
                                    current=after, change=rise, allowed=latency_max_rise,
                                    regressed=rise > latency_max_rise + 1e-12, note="relative rise"))
            if named[0][1].manifest.platform != named[1][1].manifest.platform:
                warnings.append("The two results were timed on different platforms: latency is not comparable.")
    settings = {"max_drop": max_drop, "relative": relative, "metrics": comparison.metrics,
                "latency_max_rise": latency_max_rise, "latency_stat": latency_stat,
                "significant": significant, "per_stratum": per_stratum,
                "baseline": named[0][0], "current": named[1][0], "bootstrap": n_resamples, "seed": seed}
    return GateOutcome(checks=checks, settings=settings, comparison=comparison, warnings=warnings)
