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

* trec_eval (the C program, 10.0): ``trec_eval -q -m all_trec Q R`` against ``recall-kit score
  -m all_trec -q`` three ways: the table, ``--report trec_eval`` and ``--json OUT`` (outputs to
  /dev/null but the JSON file), each a whole process: wall time and peak resident memory (the
  child's own ``ru_maxrss``, from ``wait4``).
  `--trec-eval PATH` names a trec_eval binary or its source folder (built here with ``make``
  into a temporary folder); default ``$TREC_EVAL``, else ``trec_eval`` on PATH. Its source is on
  GitHub only (usnistgov/trec_eval; PyPI's pytrec_eval sdists download it while building, which
  machines without GitHub cannot), so without one this comparison is skipped and says why.

The files: `--queries` queries x `--depth` results, scores rounded to 1/64 (many ties, so the
tie order by document id matters), 1-12 graded judgments per query; generated once into
`--folder` (default: a folder under the system temp dir) and reused. Each command runs
`--repeats` times (5), alternating; the median wall time and peak memory are compared (the best
time is printed too), and the CPU model and `uptime` before and after are printed: on a shared machine only
ratios measured in one run, alternating, mean anything. The means printed by
recall-kit and pytrec_eval are checked to agree to 1e-4 (recall-kit prints 4 decimals).

    python benchmarks/bench_score_files.py [--queries 20000,100000] [--repeats 5] [--no-ranx]
        [--trec-eval PATH]

Bars (exit 1 when missed): recall-kit / pytrec_eval <= 0.45 and recall-kit / ranx < 1.0 at each size;
each of the three `score -m all_trec -q` / trec_eval <= 1.0 in time and <= 2.0 in peak memory
(issue 52). The memory ratio to pytrec_eval is printed beside its time ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
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
PYTREC_BAR = 0.45  # issue 43: recall-kit at most 0.45x pytrec_eval's time, both as whole processes (median)
TREC_EVAL_BAR = 1.0  # issue 52: score -m all_trec -q (table, trec_eval, JSON) no slower than trec_eval 10 -q -m all_trec
TREC_EVAL_MEMORY_BAR = 2.0  # issue 52: ... and at most twice its peak resident memory

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


def cpu_model() -> str:
    """The CPU's model name (Linux), else the platform's word for it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def trec_eval_binary(given: str | None, folder: Path) -> tuple[Path | None, str]:
    """(the trec_eval program, or None, and why not): `given` a binary or a source folder (built
    with make into `folder`), else $TREC_EVAL, else trec_eval on PATH."""
    import shutil

    given = given or os.environ.get("TREC_EVAL") or shutil.which("trec_eval")
    if not given:
        return None, ("no trec_eval: its source is on GitHub only (usnistgov/trec_eval), and PyPI's pytrec_eval "
                      "sdists fetch it while building; pass --trec-eval BINARY_OR_SOURCE_FOLDER")
    path = Path(given)
    if path.is_dir():
        build = folder / "trec_eval-build"
        if build.exists():
            shutil.rmtree(build)
        shutil.copytree(path, build, ignore=shutil.ignore_patterns(".git", "*.o", "trec_eval"))
        done = subprocess.run(["make", "-C", str(build), "-j2"], capture_output=True, text=True, check=False)
        if done.returncode != 0 or not (build / "trec_eval").exists():
            return None, f"building trec_eval from {path} failed: {done.stderr.strip().splitlines()[-1:]}"
        path = build / "trec_eval"
    if not os.access(path, os.X_OK):
        return None, f"{path} is not an executable trec_eval"
    return path, ""


def timed(command: list[str], stdout_to_null: bool = False) -> tuple[float, float, str, float]:
    """(wall seconds, CPU seconds of the child, its stdout ("" when sent to /dev/null), its peak
    resident memory in MiB: the child's own, from wait4, not the largest of all children so far)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, text=True, stderr=err,
                                   stdout=subprocess.DEVNULL if stdout_to_null else out)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            err.seek(0)
            sys.stderr.write(err.read()[-3000:])
            raise SystemExit(f"command failed ({process.returncode}): {' '.join(command[:4])} ...")
        out.seek(0)
        return elapsed, usage.ru_utime + usage.ru_stime, out.read(), usage.ru_maxrss / 1024


def uptime() -> str:
    """`uptime`'s line (the load of the shared machine), or the load average where it is missing."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "load unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default="20000,100000", help="comma-separated sizes")
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--trec-eval", default=None, metavar="PATH",
                        help="trec_eval binary or source folder (default: $TREC_EVAL, else on PATH)")
    parser.add_argument("--no-pytrec", action="store_true", help="only the trec_eval comparison")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "recall-kit-bench-score")
    parser.add_argument("--no-ranx", action="store_true", help="skip ranx")
    parser.add_argument("--quick", action="store_true", help="20,000 queries only, 2 repeats")
    args = parser.parse_args()
    sizes = [20_000] if args.quick else [int(x) for x in args.queries.split(",")]
    repeats = 2 if args.quick else args.repeats
    args.folder.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; median of {repeats} runs per command, alternating")
    print(f"uptime: {uptime()}")
    trec_eval, why_not = trec_eval_binary(args.trec_eval, args.folder)
    if trec_eval is None:
        print(f"SKIP trec_eval comparison: {why_not}")
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
        if trec_eval is not None:
            compare_with_trec_eval(python, trec_eval, qrels, run, size, args.depth, repeats, args.folder)
        if args.no_pytrec:
            continue
        commands = {"recall-kit": ours_cmd, "pytrec_eval": pytrec_cmd}
        if not args.no_ranx:
            commands["ranx"] = ranx_cmd
            timed(ranx_cmd)  # the first call compiles (numba caches it); what follows is the second call
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        peaks: dict[str, list[float]] = {name: [] for name in commands}
        outputs: dict[str, str] = {}
        for _ in range(repeats):
            for name, command in commands.items():
                seconds, cpu, outputs[name], peak = timed(command)
                walls[name].append(seconds)
                cpus[name].append(cpu)
                peaks[name].append(peak)
        best = {name: statistics.median(values) for name, values in walls.items()}
        best_cpu = {name: statistics.median(values) for name, values in cpus.items()}
        peak_of = {name: statistics.median(values) for name, values in peaks.items()}

        row = next(line for line in outputs["recall-kit"].splitlines() if line.startswith("all "))
        ours_means = dict(zip(OURS, (float(x) for x in row.split()[2:])))
        theirs = {line.split()[0]: float(line.split()[1]) for line in outputs["pytrec_eval"].splitlines()}
        agree = all(abs(ours_means[m] - theirs[PYTREC[m]]) <= 1e-4 for m in OURS)
        print(f"\n{size:,} queries x {args.depth} results ({run.stat().st_size / 2**20:.0f} MiB run file)")
        for name in OURS:
            print(f"  {name:12s} recall-kit {ours_means[name]:.4f}  pytrec_eval {theirs[PYTREC[name]]:.6f}")
        for name, seconds in best.items():
            print(f"  {name:12s} {seconds:8.3f} s wall (median; best {min(walls[name]):.3f})  "
                  f"{best_cpu[name]:8.3f} s CPU  {peak_of[name]:7.1f} MiB peak")
        bar(f"score {size} queries: means agree with pytrec_eval", float(agree), "== 1", agree)
        ratio = best["recall-kit"] / best["pytrec_eval"]
        bar(f"score {size} queries / pytrec_eval (whole process)", ratio, f"<= {PYTREC_BAR}", ratio <= PYTREC_BAR)
        print(f"  CPU-time ratio recall-kit / pytrec_eval: {best_cpu['recall-kit'] / best_cpu['pytrec_eval']:.3f}")
        print(f"  peak-memory ratio recall-kit / pytrec_eval: {peak_of['recall-kit'] / peak_of['pytrec_eval']:.3f}")
        if "ranx" in best:
            ratio = best["recall-kit"] / best["ranx"]
            bar(f"score {size} queries / ranx (whole process, second call)", ratio, "< 1.0", ratio < 1.0)
    print(f"uptime at the end: {uptime()}")
    return 1 if MISSED else 0


def compare_with_trec_eval(python: str, trec_eval: Path, qrels: Path, run: Path, size: int, depth: int,
                           repeats: int, folder: Path) -> None:
    """`score -m all_trec -q` (table, trec_eval's lines, JSON) against `trec_eval -q -m all_trec`,
    alternating: median wall time and peak resident memory of each, and their ratios."""
    out = folder / f"all_trec-{size}.json"
    score = [python, "-m", "recall_kit", "score", "--qrels", str(qrels), "--run", str(run), "-m", "all_trec", "-q"]
    commands = {"trec_eval": [str(trec_eval), "-q", "-m", "all_trec", str(qrels), str(run)],
                "score -q": score, "--report trec_eval": [*score, "--report", "trec_eval"],
                "--json": [*score, "--json", str(out)]}
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, command in commands.items():
            seconds, cpu, _, peak = timed(command, stdout_to_null=True)
            walls[name].append(seconds)
            cpus[name].append(cpu)
            peaks[name].append(peak)
    medians = {name: statistics.median(values) for name, values in walls.items()}
    memory = {name: statistics.median(values) for name, values in peaks.items()}
    print(f"\n{size:,} queries x {depth}: -q -m all_trec (--json writes {out.stat().st_size / 2**20:.0f} MiB)")
    for name, seconds in medians.items():
        print(f"  {name:20s} {seconds:8.3f} s wall (median; each: {', '.join(f'{v:.2f}' for v in walls[name])})  "
              f"{statistics.median(cpus[name]):7.3f} s CPU  {memory[name]:7.1f} MiB peak")
    for name in list(commands)[1:]:
        ratio = medians[name] / medians["trec_eval"]
        bar(f"score -m all_trec {name} {size} queries / trec_eval 10, time (whole process)", ratio,
            f"<= {TREC_EVAL_BAR}", ratio <= TREC_EVAL_BAR)
        ratio = memory[name] / memory["trec_eval"]
        bar(f"score -m all_trec {name} {size} queries / trec_eval 10, peak memory", ratio,
            f"<= {TREC_EVAL_MEMORY_BAR}", ratio <= TREC_EVAL_MEMORY_BAR)
        cpu_ratio = statistics.median(cpus[name]) / statistics.median(cpus["trec_eval"])
        print(f"  CPU-time ratio {name} / trec_eval: {cpu_ratio:.3f}")


if __name__ == "__main__":
    sys.exit(main())
