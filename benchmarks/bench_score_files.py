"""`recall-kit score` on whole TREC files against pytrec_eval and ranx, each timed as a process.

What is timed, on every side, is what a user pays to score a run file against a qrels file:
a fresh process that reads both files and computes six measures.

* recall-kit: ``recall-kit score --qrels Q --run R -m recall@10,recall@100,ndcg@10,mrr,map,
  precision@5`` (start-up, plugin loading, reading, ordering, scoring, printing the table). Its
  sources are byte-compiled first (``compileall``, what ``pip install`` does; pytrec_eval's and
  ranx's were compiled when installed): with ``PYTHONDONTWRITEBYTECODE`` set, an editable
  checkout would otherwise recompile some 90 modules on every start, about 0.3 s.
* pytrec_eval: ``python -c`` that reads both files with ``pytrec_eval.parse_qrel`` /
  ``parse_run`` and runs ``RelevanceEvaluator(qrels, measures).evaluate(run)`` and the means.
* ranx: ``python -c`` with ``Qrels.from_file`` / ``Run.from_file`` (kind ``trec``) and
  ``ranx.evaluate``; one untimed process first so its numba JIT cache is warm (a "second call").

The files: `--queries` queries x `--depth` results, scores rounded to 1/64 (many ties, so the
tie order by document id matters), 1-12 graded judgments per query; generated once into
`--folder` (default: a folder under the system temp dir) and reused. Each command runs
`--repeats` times, alternating; the best (minimum) wall time is kept. The means printed by
recall-kit and pytrec_eval are checked to agree to 1e-4 (recall-kit prints 4 decimals).

    python benchmarks/bench_score_files.py [--queries 20000,100000] [--repeats 3] [--no-ranx]

Bars (exit 1 when missed): recall-kit / pytrec_eval <= 0.4 and recall-kit / ranx < 1.0 at each size.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

OURS = ("recall@10", "recall@100", "ndcg@10", "mrr", "map", "precision@5")
PYTREC = {"recall@10": "recall_10", "recall@100": "recall_100", "ndcg@10": "ndcg_cut_10",
          "mrr": "recip_rank", "map": "map", "precision@5": "P_5"}
RANX = ("recall@10", "recall@100", "ndcg@10", "mrr", "map", "precision@5")
MISSED: list[str] = []
PYTREC_BAR = 0.4  # issue 30: recall-kit at most 0.4x pytrec_eval's time, both as whole processes

PYTREC_SCRIPT = """
import sys, pytrec_eval
with open(sys.argv[1]) as f: qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f: run = pytrec_eval.parse_run(f)
names = {names!r}
values = pytrec_eval.RelevanceEvaluator(qrels, {measures!r}).evaluate(run)
for name in names:
    print(name, sum(v[name] for v in values.values()) / len(values))
"""

RANX_SCRIPT = """
import sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
for name, value in evaluate(qrels, run, {metrics!r}).items():
    print(name, value)
"""


def bar(name: str, value: float, target: str, ok: bool) -> None:
    """One machine-readable line that run_all.py summarises."""
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def write_files(folder: Path, num_queries: int, depth: int, seed: int) -> tuple[Path, Path]:
    """A TREC run and qrels of `num_queries` queries (written once, then reused)."""
    qrels_path = folder / f"qrels-{num_queries}-{depth}-{seed}.txt"
    run_path = folder / f"run-{num_queries}-{depth}-{seed}.txt"
    if qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    rng = np.random.default_rng(seed)
    levels = [repr(x / 64) for x in range(65)]
    with open(run_path.with_suffix(".tmp"), "w") as run_file, open(qrels_path.with_suffix(".tmp"), "w") as qrels_file:
        for q in range(num_queries):
            docs = [f"d{d}" for d in dict.fromkeys(rng.integers(0, 1_000_000, depth + 10).tolist())][:depth]
            scores = np.sort(rng.integers(0, 65, len(docs)))[::-1].tolist()
            run_file.write("".join(f"q{q} Q0 {d} {r} {levels[s]} tag\n"
                                   for r, (d, s) in enumerate(zip(docs, scores), start=1)))
            judged = [docs[i] for i in rng.choice(len(docs), size=int(rng.integers(1, 8)), replace=False)]
            judged += [f"d{d}" for d in rng.integers(0, 1_000_000, int(rng.integers(0, 6)))]
            judged = list(dict.fromkeys(judged))
            qrels_file.write("".join(f"q{q} 0 {d} {int(g)}\n" for d, g in zip(judged, rng.integers(0, 4, len(judged)))))
    run_path.with_suffix(".tmp").replace(run_path)
    qrels_path.with_suffix(".tmp").replace(qrels_path)
    return qrels_path, run_path


def timed(command: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"command failed ({done.returncode}): {' '.join(command[:4])} ...")
    return elapsed, cpu, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default="20000,100000", help="comma-separated sizes")
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "recall-kit-bench-score")
    parser.add_argument("--no-ranx", action="store_true", help="skip ranx")
    parser.add_argument("--quick", action="store_true", help="20,000 queries only, 2 repeats")
    args = parser.parse_args()
    sizes = [20_000] if args.quick else [int(x) for x in args.queries.split(",")]
    repeats = 2 if args.quick else args.repeats
    args.folder.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs, load average {load:.2f}; best of {repeats} runs per command")
    import recall_kit

    subprocess.run([python, "-m", "compileall", "-q", str(Path(recall_kit.__file__).parent)],
                   check=True, capture_output=True)

    for size in sizes:
        qrels, run = write_files(args.folder, size, args.depth, args.seed)
        ours_cmd = [python, "-m", "recall_kit", "score", "--qrels", str(qrels), "--run", str(run),
                    "-m", ",".join(OURS)]
        pytrec_cmd = [python, "-c", PYTREC_SCRIPT.format(names=[PYTREC[m] for m in OURS],
                                                          measures={"recall.10", "recall.100", "ndcg_cut.10",
                                                                    "recip_rank", "map", "P.5"}),
                      str(qrels), str(run)]
        ranx_cmd = [python, "-c", RANX_SCRIPT.format(metrics=list(RANX)), str(qrels), str(run)]
        commands = {"recall-kit": ours_cmd, "pytrec_eval": pytrec_cmd}
        if not args.no_ranx:
            commands["ranx"] = ranx_cmd
            timed(ranx_cmd)  # the first call compiles (numba caches it); what follows is the second call
        best = {name: float("inf") for name in commands}
        best_cpu = dict(best)
        outputs: dict[str, str] = {}
        for _ in range(repeats):
            for name, command in commands.items():
                seconds, cpu, outputs[name] = timed(command)
                best[name] = min(best[name], seconds)
                best_cpu[name] = min(best_cpu[name], cpu)

        row = next(line for line in outputs["recall-kit"].splitlines() if line.startswith("all "))
        ours_means = dict(zip(OURS, (float(x) for x in row.split()[2:])))
        theirs = {line.split()[0]: float(line.split()[1]) for line in outputs["pytrec_eval"].splitlines()}
        agree = all(abs(ours_means[m] - theirs[PYTREC[m]]) <= 1e-4 for m in OURS)
        print(f"\n{size:,} queries x {args.depth} results ({run.stat().st_size / 2**20:.0f} MiB run file)")
        for name in OURS:
            print(f"  {name:12s} recall-kit {ours_means[name]:.4f}  pytrec_eval {theirs[PYTREC[name]]:.6f}")
        for name, seconds in best.items():
            print(f"  {name:12s} {seconds:8.3f} s wall  {best_cpu[name]:8.3f} s CPU")
        bar(f"score {size} queries: means agree with pytrec_eval", float(agree), "== 1", agree)
        ratio = best["recall-kit"] / best["pytrec_eval"]
        bar(f"score {size} queries / pytrec_eval (whole process)", ratio, f"<= {PYTREC_BAR}", ratio <= PYTREC_BAR)
        print(f"  CPU-time ratio recall-kit / pytrec_eval: {best_cpu['recall-kit'] / best_cpu['pytrec_eval']:.3f}")
        if "ranx" in best:
            ratio = best["recall-kit"] / best["ranx"]
            bar(f"score {size} queries / ranx (whole process, second call)", ratio, "< 1.0", ratio < 1.0)
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
