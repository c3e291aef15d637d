"""The dense query path on ONNX Runtime against torch: same rankings, and how much faster.

Runs `recall-kit eval -r dense` on a dataset once per backend (torch; onnx; onnx with int8
dynamic quantisation of the query model), every query also timed alone (`--latency-sample -1`),
each as a process, with one warm-up eval first so the corpus embeddings and the ONNX exports are
cached (RECALL_KIT_CACHE points at a folder under the temp dir). From each result:
recall@10 and the single-query latency p50 (`latency_ms.p50`: embedding the query + search).

    python benchmarks/bench_dense_onnx.py [--dataset examples/memories] [--threads 1] [--latency-sample N]

Bars (exit 1 when missed): |recall@10(onnx) - recall@10(torch)| <= 0.005 for fp32 and int8;
the onnx p50 below torch's (both on --threads intra-op threads).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from recall_kit import BenchmarkResult, load_result

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = {"torch": ["-o", "dense.backend=torch"], "onnx": ["-o", "dense.backend=onnx"],
            "onnx-int8": ["-o", "dense.backend=onnx", "-o", "dense.quantize=true"]}
MISSED: list[str] = []


def bar(name: str, value: float, target: str, ok: bool) -> None:
    """One machine-readable line that run_all.py summarises."""
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def evaluate(dataset: Path, extra: list[str], out: Path, env: dict[str, str], sample: int = -1) -> BenchmarkResult:
    command = [sys.executable, "-m", "recall_kit", "eval", "--dataset", str(dataset), "--retriever", "dense",
               "-m", "recall@10", "-k", "10", "--latency-sample", str(sample), "--json", str(out), "--no-progress", *extra]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"eval failed: {' '.join(extra) or 'torch'}")
    return load_result(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=ROOT / "examples" / "memories")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--latency-sample", type=int, default=-1, help="queries timed alone (-1: all)")
    parser.add_argument("--quick", action="store_true", help="the same (examples/memories is small)")
    args = parser.parse_args()
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("onnxruntime is not installed: pip install \"recall-kit-dense[onnx]\"; skipped")
        return 0
    cache = Path(tempfile.gettempdir()) / "recall-kit-bench-dense-onnx"
    env = {**os.environ, "RECALL_KIT_CACHE": str(cache), "RECALL_KIT_LOAD_PLUGINS": "recall-kit-dense"}
    threads = ["-o", f"dense.threads={args.threads}"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.dataset}: {os.cpu_count()} CPUs, load average {load:.2f}, {args.threads} intra-op thread(s)")
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, extra in BACKENDS.items():
            evaluate(args.dataset, extra + threads, Path(folder) / "warm.json", env, 1)  # caches, exports
            results[name] = evaluate(args.dataset, extra + threads, Path(folder) / f"{name}.json", env,
                                     args.latency_sample)
    base = results["torch"]
    for name, result in results.items():
        recall = result.mean("recall@10")
        p50 = result.latency.stat("p50")
        print(f"  {name:10s} recall@10 {recall:.4f}  single-query p50 {p50:7.2f} ms  "
              f"speed-up {base.latency.stat('p50') / p50:5.2f}x")
    for name in ("onnx", "onnx-int8"):
        gap = abs(results[name].mean("recall@10") - base.mean("recall@10"))
        bar(f"|recall@10 {name} - torch|", gap, "<= 0.005", gap <= 0.005)
    ratio = results["onnx"].latency.stat("p50") / base.latency.stat("p50")
    bar("dense single-query p50 onnx / torch", ratio, "< 1", ratio < 1)
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
