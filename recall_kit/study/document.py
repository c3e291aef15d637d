"""The decision document: the study result rendered as markdown and HTML (its JSON is study.json).

The bottom line first, then how it was measured, the head-to-head per stratum, the ablation, the
sweep, latency and storage, the recommendation beside its rules, and the threats to validity.
Computed nothing here: every number comes from the `StudyResult`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recall_kit.study.hole_evidence import interval_line, intervals_table
from recall_kit.study.result import HeadToHead, StudyResult
from recall_kit.study.rules import RULES, SIMPLICITY_RULES
from recall_kit.types import Chart, Report, ReportTable

#: The section whose numbers change from run to run (seconds): kept last, so the rest of the
#: document is byte-identical between two runs of the same study.
TIMINGS_TITLE = "Timings (seconds per step, this machine)"


def _f(value: float | None, places: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{places}f}"


def holm_families(rows: Sequence[HeadToHead]) -> list[str]:
    """A table's note on its "p (Holm)" column: the families its rows were adjusted in ("p (Holm):
    adjusted among 8 primary rows"; with two families of different systems, whose rows are in which),
    so no p is read without the size of its family; none for no rows."""
    sizes: dict[tuple[int, str], list[str]] = {}
    for row in rows:
        if row.p_holm is not None:
            systems = sizes.setdefault((row.family_rows, row.family), [])
            systems += [] if row.system in systems else [row.system]
    if not sizes:
        return []
    named = len(sizes) > 1 and len({tuple(systems) for systems in sizes.values()}) == len(sizes)

    def family(size: int, name: str, systems: list[str]) -> str:
        words = f"{size} {name} row{'' if size == 1 else 's'}" if size else f"the {name} rows"
        return words + (f" ({', '.join(systems)})" if named else "")

    return ["p (Holm): adjusted among " + " or ".join(family(size, name, systems)
                                                      for (size, name), systems in sizes.items())]


def bottom_line(study: StudyResult) -> list[str]:
    """The answer in sentences: the recommendation, the overall verdict and the strata's (each with
    whether the unjudged pairs can flip its decision rows), and how many threats stand."""
    if not study.verdicts:
        return ["No candidate besides the baseline: nothing to decide."]
    from recall_kit.study.rules import at_ceiling_everywhere

    overall = study.verdicts[0]
    lines = []
    ceiling = at_ceiling_everywhere(study)
    if ceiling is not None:  # nothing tells the systems apart: no decision, whatever the rules pick
        lines.append(f"Inconclusive: every system scores 1.000 on {ceiling}; add queries the store's words do not "
                     "answer ([evaluation_set] generate = {paraphrase = 40} with recall-kit-llm, or your users' own "
                     "questions: queries = FILE with qrels = FILE), then `recall-kit study run` again.")
    recommendation = study.recommendation
    if recommendation is not None:
        lines.append(("Provisional recommendation" if recommendation.provisional else "Recommendation")
                     + f": {recommendation.system}, by the simplicity rule ({recommendation.because})."
                     + (f" Provisional because {recommendation.provisional_why}." if recommendation.provisional
                        else ""))
        lines += [f"What the {kind} leg buys: {words}." for kind, words in recommendation.legs.items()]
    lines.append(f"{overall.verdict.capitalize()}: {overall.system} against {study.baseline} over all queries "
                 f"({overall.because})." + (" (provisional)" if overall.provisional else "") + _flips(study, overall))
    if overall.provisional and recommendation is None:
        lines.append(f"Provisional because {overall.provisional_why}.")
    if recommendation is not None and recommendation.system != overall.system:
        lines.append(f"The verdicts are about {overall.system}, the best candidate on {study.decision_metrics[0]}; "
                     f"the recommendation stays with {recommendation.system} for the reason above.")
    holes = interval_line(study)
    lines += [holes] if holes else []
    lines += [f"Stratum {v.scope}: {v.verdict}" + (" (provisional)" if v.provisional else "") + "." + _flips(study, v)
              for v in study.verdicts[1:]]
    lines.append(f"{len(study.threats)} threat(s) to validity detected from the study's own data "
                 f"({', '.join(t.key for t in study.threats) or 'none'}); read them before acting.")
    return lines


def _flips(study: StudyResult, verdict: Any) -> str:
    """" Pairs no person labelled: recall@5 cannot flip; mrr@5 can flip." for one verdict's decision rows
    (a pair only a model judge graded is one of them: its grade is a prediction)."""
    rows = [b for b in study.bounds if b.candidate == verdict.system and b.scope == verdict.scope]
    if not rows:
        return ""
    return " Pairs no person labelled: " + "; ".join(f"{b.metric} {'can flip' if b.can_flip else 'cannot flip'}"
                                                     for b in rows) + "."


def methodology(study: StudyResult) -> list[tuple[str, str]]:
    corpus, labels, agreement = study.corpus, study.labels, study.agreement
    items = [
        ("corpus", f"{corpus.memories} memories from the {corpus.source} store; "
                   f"{corpus.sensitive_dropped} sensitive rows dropped before anything was written"
                   + (f"; {corpus.left_out_words()}" if corpus.rows_left_out else "")),
    ]
    items += [(f"stratum {s.name}", f"{s.queries} queries, {s.built}; {s.one_relevant_share:.0%} with one "
                                    f"relevant id, {s.graded_share:.0%} graded; lint: "
                                    + (", ".join(f"{n} {kind}" for kind, n in s.lint.items()) or "clean"))
              for s in study.strata]
    source = "the user's qrels" if labels.source == "qrels" else f"the user's qrels plus the judge {labels.source!r}"
    items.append(("labels", f"{source}; {labels.pooled_labels} labels added from the pool"
                            + (f"; the judge agrees with the {labels.judge_pairs} labelled pairs it learnt from at kappa "
                               f"{labels.judge_kappa:.3f}" + (f" [{labels.judge_kappa_ci[0]:.3f}, {labels.judge_kappa_ci[1]:.3f}]"
                                                              if labels.judge_kappa_ci else "")
                               + " (cross-fitted: each pair graded by a model fitted on other queries)"
                               if labels.judge_kappa is not None else "") + _sensitive(study)))
    items.append(("pool", f"depth {labels.pool_depth} from every system: {labels.pool_ids} unjudged ids "
                          f"over {labels.pool_queries} queries; share of each top {study.hook_k} labelled (the user's qrels "
                          "and people's grades; a model's grade is a prediction, not a label): "
                          + ", ".join(f"{s.name} {1 - s.unjudged_share:.0%}" for s in study.systems)))
    items.append(("judge agreement", f"kappa {agreement.kappa_words()} on {agreement.n} pairs"
                                     + (f" ({agreement.against})" if agreement.against else "")
                                     + f"; verdicts are provisional below {agreement.threshold:g}"
                  if agreement.measured else f"not measured: {agreement.why}"))
    from recall_kit.study.label_report import people_line

    people = people_line(study)
    if people:
        items.append(("people", people))
    items.append(("decision", f"{', '.join(study.decision_metrics)} (the hook reads the top {study.hook_k}); "
                              f"exploratory: {', '.join(study.exploratory_metrics) or 'none'}"))
    items.append(("statistics", f"paired bootstrap 95% intervals and paired randomisation tests "
                                f"({study.resamples} resamples, seed {study.seed}); Holm's correction over every "
                                "candidate's decision rows, overall and per stratum"))
    return items


def _sensitive(study: StudyResult) -> str:
    """"; 3 labels naming sensitive memories dropped (2 from qrels.jsonl, 1 from alice.jsonl), 1 query
    left without labels dropped with them": what the sensitive rows took from the labels, and from
    whose file."""
    dropped = study.labels.sensitive_dropped
    if not dropped:
        return ""
    queries, labels = study.labels.sensitive_queries_dropped, sum(dropped.values())
    return (f"; {labels} label{'' if labels == 1 else 's'} naming sensitive memories dropped ("
            + ", ".join(f"{n} from {name}" for name, n in dropped.items()) + ")"
            + (f", {queries} {'query' if queries == 1 else 'queries'} left without labels dropped with them"
               if queries else ""))


def head_to_head_table(study: StudyResult) -> ReportTable:
    rows = [[row.scope, row.system, row.metric, row.n, _f(row.baseline), _f(row.value), f"{row.delta:+.4f}",
             f"[{row.ci_low:+.4f}, {row.ci_high:+.4f}]", _f(row.p_holm), "yes" if row.significant else "no"]
            for row in sorted(study.head_to_head, key=lambda r: (r.scope != "overall", r.scope, r.system, r.metric))]
    return ReportTable(f"Head-to-head against {study.baseline}, per stratum",
                       ["scope", "system", "metric", "n", study.baseline, "system value", "delta", "95% CI",
                        "p (Holm)", "significant"], rows,
                       ["delta = system - baseline over the same queries; Holm over every row of this table. The 95% "
                        "CI is each row's own paired bootstrap, not Holm-adjusted: an interval that excludes 0 beside "
                        "a Holm p above 0.05 is that row alone, before the family's correction.",
                        *holm_families(study.head_to_head)])


def verdict_table(study: StudyResult) -> ReportTable:
    return ReportTable("Recommendation", ["scope", "challenger", "verdict", "because", "what it trades"],
                       [[v.scope, v.system, v.verdict, v.because, v.trades or "n/a"] for v in study.verdicts],
                       [f"Rule: {rule}" for rule in RULES])


def simplest_table(study: StudyResult) -> ReportTable | None:
    """The best candidate against every simpler system, with the rules the recommendation follows."""
    recommendation = study.recommendation
    if recommendation is None:
        return None
    rows = [[c.simpler, "+".join(c.extra_legs) or "none", r.metric, f"{r.delta:+.4f}",
             f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]", _f(r.p_holm), "yes" if r.significant else "no",
             "yes" if c.richer_earns else "no"]
            for c in recommendation.comparisons for r in c.rows]
    best = recommendation.order[-1]
    notes = [f"Order of simplicity here: {' < '.join(recommendation.order)}; recommended: {recommendation.system}.",
             f"delta = the simpler system - {best} over the same queries, as the simpler step's Reproduce line "
             f"(`recall-kit compare` with {best} first) prints it; negative: {best} is ahead"
             + (f"; margin {recommendation.margin:g}" if recommendation.margin is not None else "; no margin set")]
    notes += holm_families([r for c in recommendation.comparisons for r in c.rows])
    notes += [f"Rule: {rule}" for rule in SIMPLICITY_RULES]
    return ReportTable(f"Simplest adequate system: {best} against every simpler one",
                       ["simpler system", f"legs {best} adds", "metric", "delta", "95% CI", "p (Holm)",
                        "significant", f"{best} earns it"], rows, notes)


def ablation_table(study: StudyResult) -> ReportTable | None:
    ablation = study.ablation
    if ablation.skipped:
        return ReportTable("Ablation", ["note"], [[ablation.skipped]])
    metrics = study.decision_metrics
    rows = [[v.name, v.kind, *(_f(v.means.get(m)) for m in metrics)] for v in ablation.variants]
    notes = [f"{r.system} vs the full system, {r.metric}: {r.delta:+.4f} [{r.ci_low:+.4f}, "
             f"{r.ci_high:+.4f}] (95% CI, not Holm-adjusted), {r.holm()}" for r in ablation.rows]
    if ablation.rows:  # a leg alone may be a system the simplicity table compares too: two families, two ps
        notes.append("p (Holm) here is adjusted among the ablation's own rows (each variant against the full "
                     "system); a variant that is also a system of the simplest-adequate table has another p there, "
                     "adjusted among that table's rows: one raw test, two families of another size, so two "
                     "corrected ps; each table's family is named beside its p.")
    notes += [f"reach: leg {r.leg} (weight {r.weight:g}) put an id only it found in the fused top "
              f"{study.hook_k} in {r.queries_reached} of {r.queries} queries" for r in ablation.reach]
    return ReportTable(f"Ablation of {ablation.system}", ["variant", "kind", *metrics], rows, notes)


def sweep_table(study: StudyResult) -> ReportTable:
    sweep = study.sweep
    if sweep.skipped:
        return ReportTable("Sweep", ["note"], [[sweep.skipped]])
    rows = [[r.system, r.metric, f"{r.delta:+.4f}", f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]",
             _f(r.p_holm), "yes" if r.significant else "no"] for r in sweep.held_out]
    best = ", ".join(f"{k}={v}" for k, v in sweep.best_settings.items()) or "the default"
    notes = [f"{sweep.settings} settings, {sweep.eligible} eligible under the guards "
             f"({', '.join(sweep.guards) or 'none'}); best on the {sweep.tuning_queries} tuning queries "
             f"({sweep.target}): {best}; reported on {sweep.test_queries} held-out queries"
             if sweep.holdout else f"{sweep.settings} settings chosen and reported on the same queries",
             *holm_families(sweep.held_out)]
    return ReportTable("Sweep (held-out half)", ["system", "metric", "delta", "95% CI", "p (Holm)", "significant"],
                       rows, notes)


def cost_table(study: StudyResult) -> ReportTable:
    rows = [[s.name, _f(s.latency_p50_ms, 2), _f(s.latency_p95_ms, 2),
             "n/a" if s.index_bytes is None else f"{s.index_bytes:,}"] for s in study.systems]
    return ReportTable("Latency and storage", ["system", "p50 ms", "p95 ms", "index bytes"], rows,
                       ["single-query latency on this machine: compare within this table only"])


def threats_table(study: StudyResult) -> ReportTable:
    rows = [[t.title, " / ".join(t.evidence), t.remedy] for t in study.threats]
    return ReportTable("Threats to validity", ["threat", "evidence", "what would remove it"], rows,
                       [f"checked and not found: {', '.join(study.clear) or 'none'}"])


def charts(study: StudyResult) -> list[Chart]:
    """Per decision metric: each candidate's delta against the baseline in every scope, with its 95%
    interval (whiskers) and whether it is significant; then the best against each simpler system."""
    out = []
    for metric in study.decision_metrics:
        rows = [row for row in study.head_to_head if row.metric == metric]
        scopes = list(dict.fromkeys(row.scope for row in rows))
        out.append(Chart(kind="bar", title=f"{metric}: delta against {study.baseline} per scope", y_label="delta",
                         groups={scope: {r.system: r.delta for r in rows if r.scope == scope} for scope in scopes},
                         intervals={scope: {r.system: [r.ci_low, r.ci_high] for r in rows if r.scope == scope}
                                    for scope in scopes},
                         significant={scope: {r.system: r.significant for r in rows if r.scope == scope}
                                      for scope in scopes}))
    recommendation = study.recommendation
    if recommendation is not None and recommendation.comparisons:
        best = recommendation.order[-1]
        pairs = [(c.simpler, r) for c in recommendation.comparisons for r in c.rows]
        metrics = list(dict.fromkeys(r.metric for _, r in pairs))
        out.append(Chart(kind="bar", title=f"{best} minus each simpler system", y_label="delta",
                         groups={m: {s: -r.delta for s, r in pairs if r.metric == m} for m in metrics},
                         intervals={m: {s: [-r.ci_high, -r.ci_low] for s, r in pairs if r.metric == m}
                                    for m in metrics},
                         significant={m: {s: r.significant for s, r in pairs if r.metric == m} for m in metrics}))
    return out


def study_report(study: StudyResult) -> Report:
    """The document as a `Report` (what the HTML page renders)."""
    from recall_kit.study.label_report import bounds_table

    tables = [table for table in (simplest_table(study), verdict_table(study), bounds_table(study),
                                  intervals_table(study), head_to_head_table(study)) if table]
    tables += [table for table in (ablation_table(study), sweep_table(study), cost_table(study),
                                   threats_table(study)) if table is not None]
    tables.append(ReportTable("Reproduce (from the study folder)", ["step", "command"],
                              [[step, command] for step, command in study.commands.items()]))
    tables.append(ReportTable(TIMINGS_TITLE, ["step", "seconds"], [[k, v] for k, v in study.timings.items()]))
    return Report(title=f"recall-kit study: {study.name}", tables=tables,
                  notes=[f"{t.title}: {t.evidence[0]}" for t in study.threats], summary=bottom_line(study),
                  provenance=methodology(study), charts=charts(study), data=study.to_dict())


def render_markdown(study: StudyResult) -> str:
    from recall_kit.reporting.formats import format_table

    def section(table: ReportTable | None) -> list[str]:
        if table is None:
            return []
        out = [f"## {table.title}", "", format_table(table, "github"), ""]
        return out + [f"- {note}" for note in table.notes] + ([""] if table.notes else [])

    parts = [f"# recall-kit study: {study.name}", "", "## Bottom line", ""]
    parts += [f"- {line}" for line in bottom_line(study)] + ["", "## Methodology", ""]
    parts += [f"- **{label}**: {value}" for label, value in methodology(study)] + [""]
    parts += section(simplest_table(study)) + section(head_to_head_table(study))
    parts += section(ablation_table(study)) + section(sweep_table(study)) + section(cost_table(study))
    parts += section(verdict_table(study))
    from recall_kit.study.label_report import bounds_table

    parts += section(bounds_table(study)) + section(intervals_table(study))
    parts += ["## Threats to validity", ""]
    for threat in study.threats:
        parts += [f"### {threat.title}", ""] + [f"- evidence: {line}" for line in threat.evidence]
        parts += [f"- what would remove it: {threat.remedy}", ""]
    parts += [f"Checked and not found: {', '.join(study.clear) or 'none'}.", ""]
    parts += section(ReportTable("Reproduce (from the study folder)", ["step", "command"],
                                 [[step, f"`{command}`"] for step, command in study.commands.items()]))
    parts += section(ReportTable(TIMINGS_TITLE, ["step", "seconds"], [[k, v] for k, v in study.timings.items()]))
    return "\n".join(parts).rstrip() + "\n"


def render_html(study: StudyResult) -> str:
    from recall_kit.reporting.html import HtmlReporter

    return HtmlReporter().render(study_report(study))


def describe(study: StudyResult) -> dict[str, Any]:
    """The bottom line and threat keys, for `study run`'s closing lines."""
    return {"bottom_line": bottom_line(study), "threats": [t.key for t in study.threats]}
