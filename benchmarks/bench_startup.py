"""Start-up cost of `recall-kit --help` and `recall-kit plugins` with every installed plugin
loaded, against `python -c "import typer"` (the floor for a typer CLI), and a check that neither
command imports torch, sentence-transformers or networkx; then the CPU of the dense command,
`recall-kit eval -d examples/memories -r dense`, against `python -c "import sentence_transformers"`,
in the same run.

Timing is hyperfine-like: each command runs --runs times (after one warm-up run) in a fresh
process; the best (minimum) wall time is kept, which is the least noisy estimate on a busy machine.
RECALL_KIT_LOAD_PLUGINS is unset, so every plugin installed in this environment loads.

The dense command runs on a warm cache (a temporary RECALL_KIT_CACHE: the first, untimed run
exports the model to ONNX once and embeds the memories); its CPU (user + system of the process,
the median of --runs) is compared with the import's, and once with `-o dense.backend=torch`
(today's torch path), whose rankings are compared with the default's
(benchmarks/bench_dense_onnx_rankings.py separates near-ties from real differences). PYTHONDONTWRITEBYTECODE is unset
for these runs (a user's Python keeps its bytecode; with it set, every process compiles what it
imports again).

    python benchmarks/bench_startup.py [--runs 10]

Bars (exit 1 when missed): no heavy module imported by either command; each command's best time
`--help` at most 3x `import typer`'s, `plugins` at most 8x (a regression guard); `--help`
imports no numpy (host only, and with every plugin loaded); the dense eval at most 1.5 s of CPU
and at most 0.2x the CPU of `import sentence_transformers`, importing no torch.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("torch", "sentence_transformers", "networkx", "transformers")
MISSED: list[str] = []

# Runs the CLI in-process, then reports which heavy modules got imported (and the plugins loaded).
PROBE = """
import json, sys
sys.argv = ["recall-kit", *{args!r}]
from recall_kit.cli import main
try:
    main()
except SystemExit:
    pass
from recall_kit.plugins import pm
names = sorted(name for name, _ in pm.list_name_plugin())
heavy = [m for m in {heavy!r} if m in sys.modules]
sys.stderr.write("PROBE " + json.dumps({{"heavy": heavy, "plugins": names}}) + "\\n")
"""


def bar(name: str, value: float, target: str, ok: bool) -> None:
    """One machine-readable line that run_all.py summarises."""
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def best_of(command: list[str], runs: int, env: dict[str, str]) -> float:
    subprocess.run(command, env=env, capture_output=True, check=True)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="5 runs")
    args = parser.parse_args()
    runs = 5 if args.quick else args.runs
    env = {key: value for key, value in os.environ.items() if key != "RECALL_KIT_LOAD_PLUGINS"}
    python = sys.executable

    for name, argv in (("--help", ["--help"]), ("plugins", ["plugins"])):
        done = subprocess.run([python, "-c", PROBE.format(args=argv, heavy=HEAVY)], env=env,
                              check=False, capture_output=True, text=True)
        line = next((x for x in done.stderr.splitlines() if x.startswith("PROBE ")), None)
        if line is None:
            sys.stderr.write(done.stderr[-2000:])
            raise SystemExit(f"probe of recall-kit {name} failed")
        probe = json.loads(line[6:])
        print(f"recall-kit {name}: {len(probe['plugins'])} plugins registered; heavy modules imported: "
              f"{', '.join(probe['heavy']) or 'none'}")
        bar(f"heavy imports in 'recall-kit {name}'", len(probe["heavy"]), "== 0", not probe["heavy"])

    # numpy: the host loads it only for a command that computes; with every plugin loaded, a
    # plugin that imports it at module level (bm25, the example) brings it in anyway.
    for label, extra in (("host only", {"RECALL_KIT_LOAD_PLUGINS": ""}), ("all plugins", {})):
        done = subprocess.run([python, "-c", PROBE.format(args=["--help"], heavy=("numpy",))],
                              env={**env, **extra}, check=False, capture_output=True, text=True)
        line = next((x for x in done.stderr.splitlines() if x.startswith("PROBE ")), None)
        numpy_loaded = line is None or bool(json.loads(line[6:])["heavy"])
        bar(f"numpy imported by 'recall-kit --help' ({label})", float(numpy_loaded), "== 0", not numpy_loaded)

    floor = best_of([python, "-c", "import typer"], runs, env)
    print(f"python -c 'import typer'  best of {runs}: {floor * 1000:7.1f} ms")
    for name, argv in (("--help", ["--help"]), ("plugins", ["plugins"])):
        seconds = best_of([python, "-m", "recall_kit", *argv], runs, env)
        ratio = seconds / floor
        print(f"recall-kit {name:8s}       best of {runs}: {seconds * 1000:7.1f} ms = {ratio:.2f}x import typer")
        limit = 3 if name == "--help" else 8
        bar(f"start-up 'recall-kit {name}' / import typer", ratio, f"<= {limit}", ratio <= limit)
    dense_startup(runs, env)
    return 1 if MISSED else 0


def cpu_seconds(command: list[str], env: dict[str, str]) -> float:
    """User + system CPU seconds of `command` (and its children), run to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, env=env, capture_output=True, check=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def dense_startup(runs: int, env: dict[str, str]) -> None:
    """The dense eval's CPU on a warm cache against `import sentence_transformers`'s, and its
    rankings against the torch path's."""
    from recall_kit import load_result

    python = sys.executable
    env = {key: value for key, value in env.items() if key != "PYTHONDONTWRITEBYTECODE"}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as folder:
        env["RECALL_KIT_CACHE"] = str(Path(folder) / "cache")
        dense = [python, "-m", "recall_kit", "eval", "-d", "examples/memories", "-r", "dense", "--no-progress"]
        started = time.perf_counter()
        cpu_seconds([*dense, "--json", str(Path(folder) / "onnx.json")], env)  # the export, the embeddings
        print(f"dense eval, first run (exports the model, embeds the memories): "
              f"{time.perf_counter() - started:.1f} s wall; load average {load:.2f}")
        probe = subprocess.run([python, "-c", PROBE.format(args=dense[3:], heavy=HEAVY)], env=env, cwd=ROOT,
                               check=False, capture_output=True, text=True)
        line = next((x for x in probe.stderr.splitlines() if x.startswith("PROBE ")), None)
        heavy = json.loads(line[6:])["heavy"] if line else ["(probe failed)"]
        bar("heavy imports in the warm dense eval", len(heavy), "== 0", not heavy)
        importing = [python, "-c", "import sentence_transformers"]
        eval_cpu, import_cpu = [], []
        for _ in range(runs):  # interleaved: both see the same load
            eval_cpu.append(cpu_seconds(dense, env))
            import_cpu.append(cpu_seconds(importing, env))
        torch_cpu = cpu_seconds([*dense, "-o", "dense.backend=torch", "--json", str(Path(folder) / "torch.json")], env)
        rankings = [{query.query_id: query.ranking[:10] for query in load_result(Path(folder) / f"{name}.json").queries}
                    for name in ("onnx", "torch")]
    seconds, floor = statistics.median(eval_cpu), statistics.median(import_cpu)
    print(f"recall-kit eval -d examples/memories -r dense (warm)   CPU median of {runs}: {seconds:6.2f} s")
    print(f"python -c 'import sentence_transformers'              CPU median of {runs}: {floor:6.2f} s")
    print(f"the same eval with -o dense.backend=torch             CPU, one run:   {torch_cpu:6.2f} s")
    bar("dense eval CPU seconds (warm cache)", seconds, "<= 1.5", seconds <= 1.5)
    bar("dense eval CPU / import sentence_transformers CPU", seconds / floor, "<= 0.2", seconds / floor <= 0.2)
    differ = sum(1 for query, ranking in rankings[0].items() if rankings[1].get(query) != ranking)
    # A differing query is a near-tie swapped or a real difference: bench_dense_onnx_rankings.py tells which.
    print(f"queries whose top 10 differ between the two: {differ} of {len(rankings[0])}")


if __name__ == "__main__":
    sys.exit(main())
