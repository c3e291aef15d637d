"""Run ranx's `fuse` on runs read from stdin and print the fused runs as JSON.

Started by test_ranx_fusions.py in a subprocess with NUMBA_DISABLE_JIT=1: ranx's fusions are
numba functions, and compiling the eight of them costs minutes on a busy machine, while running
them as plain Python on a few dozen queries takes a second. Input: {"cases": [{"runs": [...],
"norm": ..., "method": ...}, ...]}; output: one {query: {doc: score}} per case.
"""

from __future__ import annotations

import json
import sys
import warnings

import ranx


def main() -> None:
    cases = json.load(sys.stdin)["cases"]
    out = []
    for case in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fused = ranx.fuse([ranx.Run(run) for run in case["runs"]], norm=case["norm"], method=case["method"])
        out.append({query: {doc: float(score) for doc, score in docs.items()}
                    for query, docs in fused.to_dict().items()})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
