"""The recommendation, by rules written down (the document prints `RULES` beside the verdicts)."""

from __future__ import annotations

from recall_kit.study.result import HeadToHead, StudyResult, Verdict

RULES = [
    "The challenger is the candidate with the best mean on the first decision metric over all queries; "
    "every candidate's decision rows (each decision metric, overall and per stratum) form one family, "
    "so choosing it after looking is paid for by Holm's correction.",
    "A delta counts when its Holm-adjusted paired randomisation p is below 0.05 (its 95% paired-bootstrap "
    "interval is shown beside it).",
    "adopt: at least one decision metric counts as better in that scope, and none counts as worse.",
    "do not adopt: any decision metric counts as worse in that scope.",
    "inconclusive: no decision metric counts either way; the smallest delta the scope could detect says "
    "how large an effect could still hide there.",
    "What it trades: the challenger's median single-query latency and index size against the baseline's, "
    "reported beside each verdict, never weighed into it.",
]


def detectable(value: float | None) -> str:
    """A minimum detectable delta as the document prints it."""
    return "n/a (no variation at this size)" if value is None else f"{value:.3f}"


def _row(row: HeadToHead) -> str:
    return (f"{row.metric} {row.delta:+.4f} [{row.ci_low:+.4f}, {row.ci_high:+.4f}], "
            f"Holm p {row.p_holm:.4f}, n {row.n}")


def trades(study: StudyResult, challenger: str) -> str:
    """Latency and storage of the challenger against the baseline, in words."""
    base, other = study.system(study.baseline), study.system(challenger)
    parts = []
    if base.latency_p50_ms and other.latency_p50_ms:
        parts.append(f"median latency {other.latency_p50_ms:.2f} ms against {base.latency_p50_ms:.2f} ms "
                     f"(x{other.latency_p50_ms / base.latency_p50_ms:.1f})")
    if base.index_bytes and other.index_bytes:
        parts.append(f"index {other.index_bytes:,} against {base.index_bytes:,} bytes "
                     f"(x{other.index_bytes / base.index_bytes:.1f})")
    return "; ".join(parts)


def recommend(study: StudyResult) -> list[Verdict]:
    """One verdict per scope (overall, then each stratum) for the challenger, by `RULES`."""
    challenger = study.challenger
    if challenger is None:
        return []
    scopes = ["overall", *(stratum.name for stratum in study.strata)]
    traded = trades(study, challenger)
    verdicts = []
    for scope in scopes:
        rows = [r for r in study.head_to_head if r.system == challenger and r.scope == scope]
        worse = [r for r in rows if r.significant and r.delta < 0]
        better = [r for r in rows if r.significant and r.delta > 0]
        if worse:
            verdict, because = "do not adopt", "worse on " + "; ".join(_row(r) for r in worse)
        elif better:
            verdict, because = "adopt", "better on " + "; ".join(_row(r) for r in better)
        else:
            hint = ""
            if scope != "overall":
                mde = study.stratum(scope).minimum_detectable
                hint = "; the smallest delta this stratum could detect: " + ", ".join(
                    f"{metric} {detectable(value)}" for metric, value in mde.items())
            verdict = "inconclusive"
            because = "no decision metric moved beyond noise (" + "; ".join(_row(r) for r in rows) + ")" + hint
        verdicts.append(Verdict(scope=scope, system=challenger, verdict=verdict, because=because, trades=traded))
    return verdicts
