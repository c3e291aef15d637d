"""How many judgments settle every verdict: the label page's order against a random order and
against judging the whole pool, on LoCoMo dev with half its evidence labels hidden.

    python benchmarks/bench_labels.py --locomo ../shared/data/locomo-dev.json

Steps: import LoCoMo dev (`recall-kit dataset import locomo`) into a temporary folder; run
`fts5` (the baseline), `bm25` and `fts5+bm25 --fusion rrf` with `eval` (top 10); hide half of
every query's evidence turns (seeded); a simulated assessor answers from the full labels (a hidden
evidence turn is relevant, any other turn not). The decision rows are the study's: every candidate
against the baseline on recall@5 and mrr@5, overall and per stratum, one Holm family; the
challenger (best recall@5) is the one whose verdicts must settle. Three ways to judge:

- page: the page's order (`Holes.order()`, recomputed after every label), until no verdict can flip;
- random: the same unjudged pairs (any candidate's or the baseline's top 5) in a random order, until
  no verdict can flip (mean over `--random-runs` seeds);
- pool: every unjudged id of the pool (each system's top 10), the study's old remedy.

Bar (exit 1 when missed): the page's order settles in at most half the judgments a random order
needs. Without --locomo (or when the file is absent) it says so and exits 0.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METRICS = ("recall@5", "mrr@5")
SYSTEMS = {"fts5": ["--retriever", "fts5"], "bm25": ["--retriever", "bm25"],
           "fts5+bm25": ["--retriever", "fts5+bm25", "--fusion", "rrf"]}
MISSED: list[str] = []


def bar(name: str, value: float, target: str, ok: bool) -> None:
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def recall_kit(*arguments: str) -> None:
    done = subprocess.run([sys.executable, "-m", "recall_kit", *arguments], check=False, cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
        raise SystemExit(f"command failed ({done.returncode}): recall-kit {' '.join(arguments[:4])} ...")


def hide_half(qrels: dict[str, dict[str, int]], seed: int) -> dict[str, dict[str, int]]:
    """Each query's judgments with half its relevant ids (rounded down, at random) removed."""
    rng = random.Random(seed)
    shown = {}
    for query in sorted(qrels):
        relevant = sorted(d for d, g in qrels[query].items() if g >= 1)
        hidden = set(rng.sample(relevant, len(relevant) // 2)) if len(relevant) > 1 else \
            ({relevant[0]} if relevant and rng.random() < 0.5 else set())
        shown[query] = {d: g for d, g in qrels[query].items() if d not in hidden}
    return shown


def tracker(rankings, shown, strata, challenger, resamples, test):
    from recall_kit.decide.holes import Holes, decision_contrasts

    queries = sorted(rankings["fts5"])
    contrasts = decision_contrasts("fts5", [n for n in SYSTEMS if n != "fts5"], METRICS, queries, strata,
                                   watched=challenger)
    return Holes(rankings, shown, contrasts, n_resamples=resamples, seed=0, test=test)


def settle(holes, truth, order: list[tuple[str, str]] | None, limit: int, name: str) -> int:
    """Judgments until no watched verdict can flip: from `order`, or the page's order when None."""
    count, started = 0, time.perf_counter()
    while not holes.settled and count < limit:
        if order is None:
            query, doc, _ = holes.order()[0]
        else:
            query, doc = order[count]
        holes.label(query, doc, truth.get(query, {}).get(doc, 0))
        count += 1
        if count % 100 == 0:
            print(f"  {name}: {count} judgments, {time.perf_counter() - started:.0f} s", flush=True)
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, help="a LoCoMo JSON file (locomo10.json format)")
    parser.add_argument("--resamples", type=int, default=1000, help="randomisation resamples of each test")
    parser.add_argument("--random-runs", type=int, default=3)
    parser.add_argument("--test", default="randomisation", help="the paired test (compare --test's names)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="accepted for run_all.py; one random run")
    args = parser.parse_args()
    if args.locomo is None or not args.locomo.is_file():
        print("nothing measured: give --locomo PATH (LoCoMo's JSON); it is not part of the repository")
        return 0
    if args.quick:
        args.random_runs = 1
    from recall_kit import load_dataset, load_result

    print(f"load: {os.getloadavg()[0]:.2f} (1-minute average, {os.cpu_count()} cores); test {args.test}, "
          f"{args.resamples} resamples", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        recall_kit("dataset", "import", "locomo", str(args.locomo), str(folder / "locomo"))
        rankings = {}
        for name, flags in SYSTEMS.items():
            out = folder / f"{name}.json"
            recall_kit("eval", "--dataset", str(folder / "locomo"), *flags, "-k", "10",
                       "--metrics", "recall@5,mrr@5", "--json", str(out))
            rankings[name] = load_result(out).rankings()
        dataset = load_dataset(folder / "locomo")
    truth = dataset.qrels
    strata = {q.query_id: q.stratum for q in dataset.queries}
    shown = hide_half(truth, args.seed)
    hidden = sum(len(truth[q]) - len(shown[q]) for q in truth)
    queries = sorted(rankings["fts5"])
    means = {n: sum(len(set(r[q][:5]) & {d for d, g in truth.get(q, {}).items() if g >= 1}) for q in queries)
             for n, r in rankings.items() if n != "fts5"}
    challenger = max(means, key=means.get)
    started = time.perf_counter()
    holes = tracker(rankings, shown, strata, challenger, args.resamples, args.test)
    first = [b for i, b in enumerate(holes.bounds(condensed=False)) if holes.contrasts[i].watched]
    flippable = sum(b.can_flip for b in first)
    upper = holes.to_settle()
    print(f"{len(queries)} queries; {hidden} evidence labels hidden; challenger {challenger}; "
          f"{flippable} of {len(first)} watched verdict rows can flip; at most {upper} judgments settle them "
          f"(set up in {time.perf_counter() - started:.1f} s)", flush=True)
    candidates = sorted({(q, d) for name in rankings for q in queries for d in rankings[name][q][:5]
                         if shown.get(q, {}).get(d, -1) < 0})
    pool = {(q, d) for name in rankings for q in queries for d in rankings[name][q][:10]
            if shown.get(q, {}).get(d, -1) < 0}
    limit = len(candidates)
    started = time.perf_counter()
    page = settle(holes, truth, None, limit, "page order")
    page_seconds = time.perf_counter() - started
    randoms = []
    for run in range(args.random_runs):
        order = list(candidates)
        random.Random(args.seed + 1 + run).shuffle(order)
        randoms.append(settle(tracker(rankings, shown, strata, challenger, args.resamples, args.test), truth, order,
                              limit, f"random order {run + 1}"))
    random_mean = sum(randoms) / len(randoms)
    print(f"judgments to settle every verdict: page order {page} ({page_seconds:.1f} s to run); random order "
          f"{random_mean:.0f} (runs: {', '.join(map(str, randoms))}); whole pool {len(pool)} "
          f"(top-5 pairs {len(candidates)})")
    print(f"ratios: random / page {random_mean / max(page, 1):.1f}x; pool / page {len(pool) / max(page, 1):.1f}x")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    bar("labels_page_vs_random", random_mean / max(page, 1), ">= 2", random_mean >= 2 * page)
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
