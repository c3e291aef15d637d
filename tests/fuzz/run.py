"""`make fuzz`: each reader's fuzz target on fresh random cases for FUZZ_SECONDS (default 60) each.

    .venv/bin/python tests/fuzz/run.py [--seconds S] [TARGET ...]

Prints, per target, the seconds it ran, the examples it tried and the first failure (hypothesis's
falsifying example, to keep as an `@example` in targets.py once fixed); exit 1 when any failed."""

from __future__ import annotations

import argparse
import os
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: `fuzz` as a package

from fuzz.harness import run_for  # noqa: E402
from fuzz.targets import targets  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("FUZZ_SECONDS", "60")))
    parser.add_argument("names", nargs="*", help="targets to run (default: all)")
    args = parser.parse_args()
    chosen = [target for target in targets() if not args.names or target.name in args.names]
    tracemalloc.start()
    failed = 0
    print(f"{'target':<12} {'seconds':>8} {'examples':>9}  result", flush=True)
    for target in chosen:
        tried, seconds, failure = run_for(target, args.seconds)
        failed += failure is not None
        print(f"{target.name:<12} {seconds:>8.0f} {tried:>9}  {'ok' if failure is None else 'FAILED'}", flush=True)
        if failure is not None:
            print(failure, file=sys.stderr, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
