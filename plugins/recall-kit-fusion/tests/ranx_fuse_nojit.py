"""Run ranx's `fuse` on runs read from stdin and print the fused runs as JSON.

Started by test_ranx_crosscheck.ranx_fuse_cases in a subprocess with NUMBA_DISABLE_JIT=1: ranx's
fusions are numba functions, and compiling them costs minutes on a busy machine (rrf and wsum alone
took 2 minutes each under two test workers), while running them as plain Python on a few dozen
queries takes a second: the same code, interpreted. Input: {"cases": [{"runs": [...], "norm": ...,
"method": ..., "params": {...} or absent}, ...]}; output: one {query: {doc: score}} per case.
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
            fused = ranx.fuse([ranx.Run(run) for run in case["runs"]], norm=case["norm"], method=case["method"],
                              params=case.get("params"))
        out.append({query: {doc: float(score) for doc, score in docs.items()}
                    for query, docs in fused.to_dict().items()})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
