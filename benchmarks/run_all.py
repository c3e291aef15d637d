"""Run every benchmark script, one after another, and summarise each stated bar as pass/fail.

Each script measures recall-kit against the alternative a user would pick, in the same run, and
prints ratios; a script states its bars as lines `BAR <name>: <value> (target ...) PASS|FAIL` and
exits non-zero when one is missed. This runner passes `--quick` (or a smaller size) to each
script, collects the BAR lines and exit statuses, prints a summary, and exits 1 when any script
failed.

    python benchmarks/run_all.py --quick        # make bench: a few minutes' sizes
    python benchmarks/run_all.py                # make bench-full: every size
    python benchmarks/run_all.py --only eval,bm25
    python benchmarks/run_all.py --only quality --locomo ../shared/data/locomo-dev.json
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The scripts that measure on LoCoMo: given `--locomo FILE`, skipped without it (bench_dense_study
#: requires it; run without, it failed on its usage line).
LOCOMO_SCRIPTS = ("bench_quality.py", "bench_labels.py", "bench_holes.py", "bench_judges.py", "bench_dense_study.py")
BAR_LINE = re.compile(r"^BAR (?P<name>.+?): (?P<value>\S+) \(target (?P<target>[^)]*)\) (?P<status>PASS|FAIL)$")

# script -> (arguments with --quick, arguments for the full run). A script absent from this
# table (written later) runs with --quick if its --help mentions it, else with no arguments.
SCRIPTS: dict[str, tuple[list[str], list[str]]] = {
    "bench_startup.py": (["--quick"], []),
    "bench_scoring.py": (["--queries", "20000"], []),
    "bench_score_files.py": (["--quick", "--no-ranx"], []),
    "bench_bm25.py": (["--quick"], []),
    "bench_lexical.py": (["--quick"], []),
    "bench_graph.py": (["--memories", "2000", "--queries", "100"], []),
    "bench_dense.py": (["--texts", "500", "--repeats", "1", "--queries", "100"], []),
    "bench_ann.py": (["--quick"], []),
    "bench_scale.py": (["--quick"], []),
    "bench_eval.py": ([], []),
    "bench_pgvector.py": (["--quick"], []),
    "bench_quality.py": ([], []),
    "bench_labels.py": (["--quick"], []),
    "bench_holes.py": (["--quick"], []),
    "bench_dense_study.py": (["--conversations", "2", "--sessions", "4"], []),
    "bench_judges.py": (["--quick"], []),
    "bench_distributed.py": (["--memories", "5000", "--queries", "100"], []),
    "bench_portability.py": ([], []),
}


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kib = int(next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal")).split()[1])
        memory = f", {kib / 2**20:.0f} GiB memory"
    except (OSError, StopIteration, ValueError):
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{os.cpu_count()} CPUs ({model}){memory}; Python {platform.python_version()}; "
            f"load average {load:.2f} at start")


def arguments(script: str, quick: bool) -> list[str]:
    if script in SCRIPTS:
        quick_args, full_args = SCRIPTS[script]
        return quick_args if quick else full_args
    return ["--quick"] if quick and "--quick" in _help(script) else []


def _help(script: str) -> str:
    done = subprocess.run([sys.executable, str(HERE / script), "--help"], check=False, capture_output=True, text=True)
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a few minutes")
    parser.add_argument("--only", help="comma-separated short names: eval,bm25,ann,scale,startup,...")
    parser.add_argument("--locomo", help="a LoCoMo JSON file for bench_quality.py, bench_labels.py, bench_holes.py, "
                                         "bench_judges.py and bench_dense_study.py (skipped without)")
    args = parser.parse_args()

    present = sorted(path.name for path in HERE.glob("bench_*.py"))
    order = [name for name in SCRIPTS if name in present] + [name for name in present if name not in SCRIPTS]
    if args.only:
        wanted = {f"bench_{name.strip()}.py" for name in args.only.split(",")}
        order = [name for name in order if name in wanted]
    print(f"machine: {machine()}")
    summary = []
    for script in order:
        command = [sys.executable, str(HERE / script), *arguments(script, args.quick)]
        if script in LOCOMO_SCRIPTS:
            if not args.locomo:
                print(f"\n=== {script}: skipped (it needs --locomo FILE)", flush=True)
                continue
            command += ["--locomo", args.locomo]
        print(f"\n=== {script} {' '.join(command[2:])}", flush=True)
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        bars = []
        assert process.stdout is not None
        for line in process.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            match = BAR_LINE.match(line.strip())
            if match:
                bars.append(match.groupdict())
        code = process.wait()
        summary.append((script, time.perf_counter() - started, code, bars))

    print("\n=== summary")
    failed = False
    for script, seconds, code, bars in summary:
        status = "ok" if code == 0 else f"FAILED (exit {code})"
        failed |= code != 0
        print(f"{script:20s} {seconds:7.1f} s  {status}")
        for item in bars:
            print(f"    {item['status']}  {item['name']}: {item['value']} (target {item['target']})")
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
