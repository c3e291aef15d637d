"""Start-up cost of `recall-kit --help` and `recall-kit plugins` with every installed plugin
loaded, against `python -c "import typer"` (the floor for a typer CLI), and a check that neither
command imports torch, sentence-transformers or networkx.

Timing is hyperfine-like: each command runs --runs times (after one warm-up run) in a fresh
process; the best (minimum) wall time is kept, which is the least noisy estimate on a busy machine.
RECALL_KIT_LOAD_PLUGINS is unset, so every plugin installed in this environment loads.

    python benchmarks/bench_startup.py [--runs 10]

Bars (exit 1 when missed): no heavy module imported by either command; each command's best time
`--help` at most 3x `import typer`'s, `plugins` at most 8x (a regression guard); `--help`
imports no numpy (host only, and with every plugin loaded).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

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
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
