"""Retrieval quality of the recommended systems (examples/systems/*.toml) on LoCoMo: recall@5 and
recall@10 per stratum, paired 95% bootstrap CIs, and each `recall-kit eval`'s wall time.

    python benchmarks/bench_quality.py --locomo ../shared/data/locomo-dev.json

Steps: `recall-kit dataset import locomo PATH` into a temporary folder; `recall-kit eval
--config examples/systems/NAME.toml` for lexical, dense, hybrid and hybrid-graph, in that order
(dense.toml embeds the corpus with the same context as the hybrids' dense leg, so the hybrids'
evals run with a warm embedding cache: the hybrid's wall time is the warm-cache time); then
paired comparisons from the result files (recall_kit.compare.compare_results, 10,000 resamples,
seed 0): hybrid against the better of lexical and dense on recall@5, and hybrid-graph against
hybrid on the multi-hop stratum's recall@10.

Bars (exit 1 when missed): hybrid recall@5 >= 0.68; hybrid minus the better single system,
recall@5, CI low > 0; hybrid-graph minus hybrid, multi-hop recall@10, CI low > 0; hybrid eval
wall time < 60 s. Without --locomo (or when the file is absent) it says so and exits 0.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("lexical", "dense", "hybrid", "hybrid-graph")
METRICS = ("recall@5", "recall@10")
MISSED: list[str] = []


def bar(name: str, value: float, target: str, ok: bool) -> None:
    """One machine-readable line that run_all.py summarises."""
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def recall_kit(*arguments: str) -> float:
    """Run the CLI as a user would; return its wall seconds."""
    command = [sys.executable, "-m", "recall_kit", *arguments]
    started = time.perf_counter()
    done = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
        raise SystemExit(f"command failed ({done.returncode}): recall-kit {' '.join(arguments[:4])} ...")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, help="a LoCoMo JSON file (locomo10.json format)")
    parser.add_argument("--systems", type=Path, default=ROOT / "examples" / "systems")
    parser.add_argument("--bootstrap", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="accepted for run_all.py; same work")
    args = parser.parse_args()
    if args.locomo is None or not args.locomo.is_file():
        print(f"bench_quality: no LoCoMo file ({args.locomo or 'none given'}); pass --locomo PATH. Skipped.")
        return 0

    from recall_kit.decide.compare import compare_results
    from recall_kit.measure.result import BenchmarkResult

    with tempfile.TemporaryDirectory(prefix="recall-kit-quality-") as temporary:
        folder = Path(temporary)
        data = folder / "locomo"
        recall_kit("dataset", "import", "locomo", str(args.locomo), str(data))
        results: dict[str, BenchmarkResult] = {}
        wall: dict[str, float] = {}
        for name in SYSTEMS:
            out = folder / f"{name}.json"
            wall[name] = recall_kit("eval", "--config", str(args.systems / f"{name}.toml"), "--dataset", str(data),
                                    "--metrics", ",".join(METRICS), "--json", str(out), "--no-progress")
            results[name] = BenchmarkResult.load(out)

    strata = ["overall", *sorted(results["lexical"].strata)]
    print(f"LoCoMo {args.locomo.name}: {results['lexical'].dataset.queries} queries; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    header = f"{'stratum':12s} {'n':>4s}  " + "  ".join(f"{name:>12s}" for name in SYSTEMS)
    for metric in METRICS:
        print(f"\n{metric}\n{header}")
        for stratum in strata:
            scope = None if stratum == "overall" else stratum
            values = [f"{results[name].mean(metric, scope):12.4f}" for name in SYSTEMS]
            print(f"{stratum:12s} {results['lexical'].stratum_size(scope):4d}  " + "  ".join(values))
    print("\nwall seconds of each eval: " + ", ".join(f"{name} {wall[name]:.1f}" for name in SYSTEMS))

    single = max(("lexical", "dense"), key=lambda name: results[name].mean("recall@5"))
    versus = compare_results([(single, results[single]), ("hybrid", results["hybrid"])],
                             metrics=list(METRICS), n_resamples=args.bootstrap, seed=0)
    graph = compare_results([("hybrid", results["hybrid"]), ("hybrid-graph", results["hybrid-graph"])],
                            metrics=list(METRICS), n_resamples=args.bootstrap, seed=0)
    print(f"\npaired differences (95% bootstrap CI, {args.bootstrap} resamples):")
    for comparison, challenger in ((versus, "hybrid"), (graph, "hybrid-graph")):
        for row in comparison.rows:
            print(f"  {challenger} - {comparison.baseline:8s} {row.metric:9s} {row.scope:12s} n={row.n:4d} "
                  f"{row.delta:+.4f} [{row.ci_low:+.4f}, {row.ci_high:+.4f}]  W/T/L {row.wins}/{row.ties}/{row.losses}")

    bar("hybrid recall@5", results["hybrid"].mean("recall@5"), ">= 0.68",
        results["hybrid"].mean("recall@5") >= 0.68)
    row = versus.row("hybrid", "recall@5")
    bar(f"hybrid - {single} recall@5 CI low", row.ci_low, "> 0", row.ci_low > 0)
    row = graph.row("hybrid-graph", "recall@10", "multi-hop")
    bar("hybrid-graph - hybrid multi-hop recall@10 CI low", row.ci_low, "> 0", row.ci_low > 0)
    bar("hybrid eval wall seconds (warm embedding cache)", wall["hybrid"], "< 60", wall["hybrid"] < 60)
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
