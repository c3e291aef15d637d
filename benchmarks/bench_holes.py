"""Do the intervals hold the truth when half the evidence is hidden? Coverage and width of each
interval the study could print, and the labels a verdict takes to settle, on LoCoMo dev.

    python benchmarks/bench_holes.py --locomo ../shared/data/locomo-dev.json

Steps: `recall-kit dataset import locomo PATH` into a temporary folder; `recall-kit eval --config
examples/systems/lexical.toml` and `hybrid-mpnet.toml` (`make mpnet`), once each (`--runs DIR`
keeps their result files for a rerun); then, for each of `--seeds` seeds, on the saved rankings:
hide half of every question's evidence turns (seeded, as bench_labels.py), and compare
hybrid-mpnet against lexical on `--metric` (hit@5: LoCoMo's success@5) over all questions. The
truth is the delta with every evidence turn shown. The flow is the study's own code, not a
re-derivation: `Holes` on the visible judgments (the study's bounds and intervals steps),
`recall_kit.study.steps.intervals.draw_sample` (the seeded sample and each sample query's pairs: every
system's unlabelled ids in its top k, as the label page offers them) and `interval_row` (the row
the study's document prints). A simulated person labels every pair of the sample's first queries
from the full evidence (an evidence turn is relevant, any other turn not). Intervals (95%):

- today: the paired bootstrap of the delta with every unjudged hit not relevant;
- bounds: the lowest and highest delta over every labelling of the unjudged hits (decide/holes.py);
- for each number of labelled queries (`--sizes`), the first ones of a seeded random sample of the
  open queries (those whose delta some label can move; decided ones count exactly), every hole of
  each labelled: labelled only (ppi-python's classical_mean_ci), PPI++ with holes predicted not
  relevant (ppi_mean_ci: the study's interval without a judge), PPI++ with a judge as the
  predictor (`--judge combined`: the study's default judge, recall_kit_dense's `combined`, fitted
  for each seed as the study fits it, on the judgments it can see taken as complete over the two
  systems' top 10 (the visible evidence turns relevant, every other ranked turn not: the hidden
  evidence counts as not relevant), cross-fitted over questions, and not refitted as the simulated
  person's labels arrive (the study refits on them; this does not simulate that), its probability of
  relevance as the predictor (the expected delta over it, as the study's intervals take it); `--judge FILE`, a
  qrels JSONL of grades 0-3; else the answer-overlap rule: a turn is predicted relevant when it
  holds at least half the non-stop words of the question's gold answer), and cross-prediction
  (crossppi_mean_ci, a logistic regression on each pair's reciprocal ranks in both systems and its
  answer overlap, cross-fitted on the labelled pairs).

Labels to settle: walking each seed's sample in `--step`-query strides, the labels the PPI++
interval (no judge) spends until it excludes 0 (all of the open queries' holes if it never does);
N50 and N80 are the 50th and 80th percentiles over seeds. The last line:
`bench_holes: coverage C over S seeds; labels to settle: N50 at 50%, N80 at 80%`, C the lowest
coverage of the study's interval (PPI++, with or without the judge) over the sizes from which the
study gives one (`recall_kit.decide.ppi.MIN_LABELLED` labelled queries).

Bar (exit 1 when missed): C >= 0.93. Without --locomo (or when the file is absent) it says so and
exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import bench_labels
import numpy as np
from bench_labels import bar, hide_half, recall_kit

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("lexical", "hybrid-mpnet")
METHODS = ("labelled only", "ppi++ no judge", "ppi++ judge", "cross-ppi")


def run_systems(locomo: Path, runs: Path, metric: str) -> None:
    """Import LoCoMo and evaluate both systems into `runs` (kept when already there)."""
    if not (runs / "locomo" / "qrels.jsonl").is_file():
        recall_kit("dataset", "import", "locomo", str(locomo), str(runs / "locomo"))
    for name in SYSTEMS:
        out = runs / f"{name}.json"
        if not out.is_file():
            started = time.perf_counter()
            recall_kit("eval", "--config", str(ROOT / "examples" / "systems" / f"{name}.toml"), "--dataset",
                       str(runs / "locomo"), "-k", "10", "--metrics", metric, "--json", str(out), "--no-progress")
            print(f"eval {name}: {time.perf_counter() - started:.0f} s", flush=True)


def answers_of(locomo: Path) -> dict[str, str]:
    """Query id (as the locomo importer names it) -> LoCoMo's gold answer."""
    out = {}
    for conversation in json.loads(locomo.read_text(encoding="utf-8")):
        for index, question in enumerate(conversation.get("qa", [])):
            if isinstance(question, dict) and "answer" in question:
                out[f"{conversation['sample_id']}:q{index}"] = str(question["answer"])
    return out


def overlap(answer: set[str], text: str) -> float:
    from recall_kit.curate.text import content_words

    return len(answer & content_words(text)) / len(answer) if answer else 0.0


def judge_predictions(args: argparse.Namespace, queries: list[str], rankings: dict, texts: dict[str, str],
                      answers: dict[str, set[str]]) -> tuple[dict[str, dict[str, float]], str]:
    """The judge predictor on every top-5 pair: a grades file's, or the answer-overlap rule's."""
    if args.judge is not None:
        from recall_kit.dataset import read_qrels_jsonl

        grades = read_qrels_jsonl(Path(args.judge))
        return ({q: {d: float(g >= 1) for d, g in grades.get(q, {}).items()} for q in queries},
                f"grades file {Path(args.judge).name}")
    return ({q: {d: float(overlap(answers.get(q, set()), texts[d]) >= 0.5)
                 for name in SYSTEMS for d in rankings[name][q][:5]} for q in queries},
            "answer overlap >= 1/2 of the gold answer's non-stop words")


class FittedJudge:
    """The `combined` judge, fitted for each seed on what that seed shows: `of(shown, seed)` -> the
    predictor on every top-5 pair (its probability of relevance, as the study's intervals take it)."""

    def __init__(self, dataset, results: dict, rankings: dict) -> None:
        from recall_kit_dense.judges import CombinedJudge

        from recall_kit.curate.evidence import judging_context

        class Remembering(CombinedJudge):
            """The combined judge, each pair's signals computed once for all seeds (they depend on
            the texts only; the fit, on the labels)."""

            rows: dict = {}

            def features(self, pairs):
                missing = [pair for pair in pairs if (pair[0].query_id, pair[1].id) not in self.rows]
                if missing:
                    for pair, row in zip(missing, super().features(missing), strict=True):
                        self.rows[(pair[0].query_id, pair[1].id)] = row
                return np.array([self.rows[(query.query_id, memory.id)] for query, memory in pairs])

        self.judge_class = Remembering
        self.context = judging_context(dataset, [(name, results[name]) for name in SYSTEMS], {})
        # every ranked pair's signals, once (one fit on the full evidence, its models dropped)
        self.fit(dataset.qrels, 0)
        self.pairs = [(self.context.queries[q], self.context.corpus[d])
                      for q in sorted(rankings[SYSTEMS[0]]) for d in dict.fromkeys(
                          d for name in SYSTEMS for d in rankings[name][q][:5])]

    def fit(self, shown: dict, seed: int):
        """The judge as the study fits it: on the judgments shown, taken as complete over the runs."""
        import dataclasses

        from recall_kit.curate.evidence import complete_labels

        visible = {q: grades for q, grades in shown.items() if grades}  # as a qrels file holds them
        judge = self.judge_class()
        judge.prepare()
        judge.fit(dataclasses.replace(self.context, labels=complete_labels(visible, dict(self.context.evidence)),
                                      seed=seed))
        return judge

    def of(self, shown: dict, seed: int) -> dict[str, dict[str, float]]:
        """The predictor as the study's intervals take it: the judge's probability of relevance."""
        judge = self.fit(shown, seed)
        out: dict[str, dict[str, float]] = {}
        for (query, memory), value in zip(self.pairs, judge.probabilities(self.pairs), strict=True):
            out.setdefault(query.query_id, {})[memory.id] = value
        return out


def features_of(queries: list[str], rankings: dict, texts: dict[str, str],
                answers: dict[str, set[str]]) -> dict[tuple[str, str], list[float]]:
    """(query, id) -> reciprocal rank in each system's top 10, and the answer overlap."""
    out = {}
    for q in queries:
        for d in dict.fromkeys(d for name in SYSTEMS for d in rankings[name][q][:5]):
            ranks = [1.0 / (rankings[name][q][:10].index(d) + 1) if d in rankings[name][q][:10] else 0.0
                     for name in SYSTEMS]
            out[(q, d)] = [*ranks, overlap(answers.get(q, set()), texts[d])]
    return out


def one_seed(seed: int, args: argparse.Namespace, data: dict) -> dict:
    """Every interval of one seed's hidden evidence, as the study computes it; the labels its PPI
    interval takes to settle.

    The study's own code draws and computes: `Holes` over the two systems' rankings with the seed's
    visible judgments (the study's bounds and intervals steps), `study.steps.intervals.draw_sample` (the
    seeded sample of open queries and each one's pairs: every system's unlabelled ids in its top k,
    as the label page offers them) and `study.steps.intervals.interval_row` (the study's row: its PPI++
    interval from the labelled prefix, with or without the judge as predictor). The simulated person
    labels every pair of the sample's first queries from the full evidence."""
    from recall_kit.decide import ppi
    from recall_kit.decide.holes import Contrast, Holes, metric_spec
    from recall_kit.decide.stats import paired_bootstrap
    from recall_kit.study.steps.intervals import NO_JUDGE, draw_sample, interval_row

    queries, truth = data["queries"], data["truth"]
    shown = hide_half(truth, seed)
    contrast = Contrast(SYSTEMS[0], SYSTEMS[1], args.metric, "overall", tuple(queries))
    holes = Holes(data["rankings"], shown, [contrast], n_resamples=100, seed=seed, shapes=data["shapes"])
    tables = {q: holes.table(contrast, q) for q in queries}
    judge = data["judge"] if data["fitted"] is None else data["fitted"].of(shown, seed)
    # the bounds: each question at its lowest / highest delta over the labellings (Holes.bound's ends)
    bound = (float(np.mean([t.delta[t.low] for t in tables.values()])),
             float(np.mean([t.delta[t.high] for t in tables.values()])))
    today = paired_bootstrap([t.baseline[0] for t in tables.values()], [t.candidate[0] for t in tables.values()],
                             n_resamples=args.bootstrap, seed=seed)
    sample, pairs = draw_sample(holes, SYSTEMS, int(metric_spec(args.metric).rank_cutoff or 0), seed)
    out = {"today": (today.low, today.high), "bounds": bound, "open": len(sample),
           "holes": sum(len(tables[q].holes) for q in sample), "sizes": {}}
    for size in args.sizes:
        first = set(sample[:size])
        people: dict[str, dict[str, int]] = {}
        for q, d in pairs:
            if q in first:
                people.setdefault(q, {})[d] = truth.get(q, {}).get(d, 0)
        got = {"labelled only": ppi.interval(tables, sample, people, method=ppi.LABELLED, min_labelled=2)}
        if size >= ppi.MIN_LABELLED:  # the study's rows, as its intervals step computes them
            for name, predictions, predictor in (("ppi++ no judge", {}, NO_JUDGE), ("ppi++ judge", judge, "judge")):
                row = interval_row(holes, contrast, sample, people, predictions, predictor, 200, seed)["interval"]
                got[name] = None if row is None else ppi.Interval.from_dict(row)
        else:  # below the study's minimum it gives none: shown here to say why it has one
            got["ppi++ no judge"] = ppi.interval(tables, sample, people, min_labelled=2)
            got["ppi++ judge"] = ppi.interval(tables, sample, people, judge, predictor="judge", min_labelled=2)
        folds = ppi.cross_predictions(data["features"], people, sample[:size], folds=5, seed=seed)
        got["cross-ppi"] = ppi.interval(tables, sample, people, method=ppi.CROSS, cross=folds, min_labelled=2)
        out["sizes"][size] = {name: None if found is None else (found.low, found.high, found.labels)
                              for name, found in got.items()}
    out["settle"] = settle(tables, sample, truth, args.step, None)
    out["settle_judge"] = settle(tables, sample, truth, args.step, judge)
    out["judge_on_holes"] = agreement(tables, sample, truth, judge)
    return out


def agreement(tables: dict, sample: list[str], truth: dict, predictions: dict) -> tuple[float, float, float]:
    """The predictor against the truth on the open queries' holes: kappa, sensitivity, specificity."""
    from sklearn.metrics import cohen_kappa_score

    pairs = [(int(truth.get(q, {}).get(d, 0) >= 1), int(predictions.get(q, {}).get(d, 0.0) >= 0.5))
             for q in sample for d in tables[q].holes]
    actual, said = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
    return (float(cohen_kappa_score(actual, said)), float(said[actual == 1].mean()), float(1 - said[actual == 0].mean()))


def settle(tables: dict, sample: list[str], truth: dict, step: int, predictions: dict | None) -> int:
    """Labels the PPI++ interval spends until it excludes 0 (`predictions` None: holes not relevant)."""
    from recall_kit.decide import ppi

    people: dict[str, dict[str, int]] = {}
    for end in range(0, len(sample) + step, step):
        for q in sample[max(end - step, 0):end]:
            people[q] = {d: truth.get(q, {}).get(d, 0) for d in tables[q].holes}
        found = ppi.interval(tables, sample, people, predictions)
        if found is not None and (found.low > 0 or found.high < 0):
            return found.labels
    return sum(len(tables[q].holes) for q in sample)


def summarise(results: list[dict], args: argparse.Namespace, target: float) -> float:
    """Print each interval's coverage and mean width; return the study's interval's lowest coverage."""
    def line(name: str, pairs: list[tuple[float, float]], labels: str = "") -> float:
        cover = float(np.mean([low <= target <= high for low, high in pairs]))
        width = float(np.mean([high - low for low, high in pairs]))
        print(f"  {name:34s} coverage {cover:.3f}  width {width:.4f}{labels}")
        return cover

    print(f"\ntruth (every evidence turn shown): {args.metric} delta {target:+.4f}; {len(results)} seeds; "
          f"open queries {np.mean([r['open'] for r in results]):.0f} on average, their holes "
          f"{np.mean([r['holes'] for r in results]):.0f}")
    line("today (bootstrap, holes not rel.)", [r["today"] for r in results])
    line("bounds (every labelling)", [r["bounds"] for r in results])
    from recall_kit.decide.ppi import MIN_LABELLED

    study = []
    for size in args.sizes:
        print(f" {size} labelled open queries" + ("" if size >= MIN_LABELLED else
                                                   f" (below the study's minimum, {MIN_LABELLED}: no interval)") + ":")
        for name in METHODS:
            found = [r["sizes"][size][name] for r in results if r["sizes"][size][name] is not None]
            if not found:
                continue
            cover = line(name, [(low, high) for low, high, _ in found],
                         f"  labels {np.mean([n for _, _, n in found]):.0f}")
            if name.startswith("ppi++") and size >= MIN_LABELLED:
                study.append(cover)
    return min(study) if study else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, help="a LoCoMo JSON file (locomo10.json format)")
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--metric", default="hit@5")
    parser.add_argument("--sizes", default="10,20,30,50,100,200", help="labelled open queries, comma-separated")
    parser.add_argument("--step", type=int, default=10, help="queries added at a time while settling")
    parser.add_argument("--bootstrap", type=int, default=2000, help="resamples of today's interval")
    parser.add_argument("--judge", help="the predictor: `combined` (the study's default judge, fitted each seed) "
                        "or a judge's grades (qrels JSONL, 0-3); default the answer-overlap rule")
    parser.add_argument("--no-answers", action="store_true",
                        help="every reference answer removed from the questions (a store without answers: issue 68)")
    parser.add_argument("--runs", type=Path, help="keep the imported data and result files here (reused)")
    parser.add_argument("--save", type=Path, help="write every seed's intervals here (JSON)")
    parser.add_argument("--quick", action="store_true", help="for run_all.py: 20 seeds")
    args = parser.parse_args()
    if args.locomo is None or not args.locomo.is_file():
        print(f"bench_holes: no LoCoMo file ({args.locomo or 'none given'}); pass --locomo PATH. Skipped.")
        return 0
    if args.judge not in (None, "combined") and not Path(args.judge).is_file():
        print(f"bench_holes: --judge {args.judge}: neither `combined` nor a grades file (qrels JSONL).", file=sys.stderr)
        return 2
    if args.quick:
        args.seeds = 20
    args.sizes = [int(x) for x in args.sizes.split(",")]
    from recall_kit import load_dataset, load_result
    from recall_kit.measure.score.evaluation import judge_rankings
    from recall_kit.measure.score.metric_names import resolve_metrics

    print(f"load: {os.getloadavg()[0]:.2f} (1-minute average, {os.cpu_count()} cores)", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="recall-kit-holes-")) if args.runs is None else args.runs
    try:
        run_systems(args.locomo, scratch, args.metric)
        results = {name: load_result(scratch / f"{name}.json") for name in SYSTEMS}
        rankings = {name: result.rankings() for name, result in results.items()}
        dataset = load_dataset(scratch / "locomo")
    finally:
        if args.runs is None:
            shutil.rmtree(scratch, ignore_errors=True)
    from recall_kit.curate.text import content_words

    queries = sorted(rankings[SYSTEMS[0]])
    truth = {q: dict(j) for q, j in dataset.qrels.items()}
    (spec,) = resolve_metrics([args.metric])
    values = [spec.compute(judge_rankings(queries, [rankings[n][q] for q in queries], truth, complete=True))
              for n in SYSTEMS]
    texts = {m.id: m.content for m in dataset.corpus}
    answers = {q: content_words(a) for q, a in answers_of(args.locomo).items()}
    if args.no_answers:  # the judge and the cross-fitted predictor see no reference answer
        import dataclasses

        dataset = dataclasses.replace(dataset, queries=[dataclasses.replace(q, answer=None) for q in dataset.queries])
        answers = {}
    if args.judge == "combined":
        fitted, judge, judge_name = FittedJudge(dataset, results, rankings), None, \
            "combined (its default signals, fitted each seed on the visible judgments; its probabilities)"
    else:
        fitted, (judge, judge_name) = None, judge_predictions(args, queries, rankings, texts, answers)
    data = {"queries": queries, "truth": truth, "rankings": rankings, "judge": judge, "fitted": fitted, "shapes": {},
            "delta":
            float((values[1] - values[0]).mean()), "features": features_of(queries, rankings, texts, answers)}
    print(f"{len(queries)} questions; {SYSTEMS[1]} - {SYSTEMS[0]} {args.metric}; judge: {judge_name}"
          + ("; every reference answer removed" if args.no_answers else ""), flush=True)
    started, results = time.perf_counter(), []
    for seed in range(args.seeds):
        results.append(one_seed(seed, args, data))
        if (seed + 1) % 20 == 0:
            print(f"  {seed + 1} seeds, {time.perf_counter() - started:.0f} s", flush=True)
    if args.save is not None:
        args.save.write_text(json.dumps({"truth": data["delta"], "seeds": results}), encoding="utf-8")
    coverage = summarise(results, args, data["delta"])
    spent = [r["settle"] for r in results]
    n50, n80 = (int(np.ceil(np.percentile(spent, p))) for p in (50, 80))
    j50, j80 = (int(np.ceil(np.percentile([r["settle_judge"] for r in results], p))) for p in (50, 80))
    print(f"labels to settle (PPI++, holes not relevant): {n50} at 50% of seeds, {n80} at 80% "
          f"(of {np.mean([r['holes'] for r in results]):.0f} open-query holes)")
    print(f"labels to settle (PPI++, the judge as predictor): {j50} at 50% of seeds, {j80} at 80%")
    kappa, sensitivity, specificity = np.mean([r["judge_on_holes"] for r in results], axis=0)
    print(f"the judge on the open queries' holes (mean over seeds): kappa {kappa:.3f}, sensitivity "
          f"{sensitivity:.3f}, specificity {specificity:.3f}")
    print(f"load after: {os.getloadavg()[0]:.2f}; {time.perf_counter() - started:.0f} s for {args.seeds} seeds")
    bar("bench_holes study interval coverage", coverage, ">= 0.93", coverage >= 0.93)
    print(f"bench_holes: coverage {coverage:.3f} over {args.seeds} seeds; labels to settle: {n50} at 50%, {n80} at 80%")
    return 1 if bench_labels.MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
