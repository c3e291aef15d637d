"""Benchmark recall-kit-remote and recall-kit-mem0.

1. Per-query cost of each adapter against calling the same search in-process: the fts5 plugin's
   query behind an HTTP endpoint (the standard library's server), a JSON-lines program, and an MCP
   server (stdio and streamable HTTP), all on this machine, on the example dataset. Each side is
   timed one query at a time over the same queries; the adapters' time is split into the wait on
   the outside system (`Retriever.last_wait_ms`) and the client's own overhead.
2. With --locomo: mem0 (infer=False, the packaged all-MiniLM-L6-v2, local Qdrant) against the
   `dense` leg with the same model over the same text (they should agree within noise: a check of
   the adapter) and against examples/systems/hybrid.toml, recall@5 and recall@10 with paired 95%
   bootstrap CIs.

    python benchmarks/bench_remote.py [--queries 120] [--locomo ../shared/data/locomo-dev.json]

The test systems (tests/systems of the remote plugin) serve the example dataset; nothing private is
read or printed. Exits 1 when mem0 and dense differ on recall@5 by a CI that excludes 0.
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ROOT / "plugins" / "recall-kit-remote" / "tests" / "systems"
EXAMPLE = ROOT / "examples" / "memories"
METRICS = ("recall@5", "recall@10")
sys.path.insert(0, str(SYSTEMS))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def time_queries(retriever: Any, queries: list[str], k: int) -> tuple[list[float], list[float]]:
    """Per query: total ms of `search`, and the ms it waited on the outside system (0 in-process)."""
    retriever.search(queries[0], k)  # warm: lazy loads and first connections are not query cost
    total, wait = [], []
    for query in queries:
        started = time.perf_counter()
        retriever.search(query, k)
        total.append((time.perf_counter() - started) * 1000.0)
        waited = retriever.last_wait_ms()
        wait.append(waited if waited is not None else 0.0)
    return total, wait


def adapter_overhead(query_count: int, k: int) -> None:
    from http_server import SearchServer
    from memory_store import MemoryStore
    from recall_kit_fts5 import FTS5Retriever
    from recall_kit_remote import CommandRetriever, HTTPRetriever, MCPRetriever

    from recall_kit import load_dataset

    dataset = load_dataset(str(EXAMPLE))
    queries = [query.text for query in dataset.queries][:query_count]
    python = shlex.quote(sys.executable)
    mcp_server = f"{python} {shlex.quote(str(SYSTEMS / 'mcp_server.py'))} --dataset {shlex.quote(str(EXAMPLE))}"
    port = free_port()
    mcp_http = subprocess.Popen([sys.executable, str(SYSTEMS / "mcp_server.py"), "--dataset", str(EXAMPLE),
                                 "--transport", "streamable-http", "--port", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows: list[tuple[str, list[float], list[float]]] = []
    try:
        with SearchServer(MemoryStore.from_dataset(str(EXAMPLE))) as server:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    time.sleep(0.2)
            makers: list[tuple[str, Callable[[], Any]]] = [
                ("in-process fts5", FTS5Retriever),
                ("http (GET, stdlib server)", lambda: HTTPRetriever(HTTPRetriever.Options(url=server.url))),
                ("command (JSON lines)", lambda: CommandRetriever(CommandRetriever.Options(
                    argv=f"{python} {shlex.quote(str(SYSTEMS / 'command_search.py'))}", send_corpus=True))),
                ("mcp (stdio)", lambda: MCPRetriever(MCPRetriever.Options(command=mcp_server))),
                ("mcp (streamable HTTP)", lambda: MCPRetriever(MCPRetriever.Options(url=f"http://127.0.0.1:{port}/mcp"))),
            ]
            for name, make in makers:
                retriever = make()
                retriever.build_index(dataset.corpus)
                try:
                    total, wait = time_queries(retriever, queries, k)
                finally:
                    retriever.close()
                rows.append((name, total, wait))
    finally:
        mcp_http.terminate()
        mcp_http.wait(timeout=10)
    base = statistics.median(rows[0][1])
    print(f"Per-query cost, {len(queries)} queries of the example dataset, k={k}, one at a time "
          f"({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}):")
    print(f"  {'system':28s} {'p50 ms':>8s} {'p95 ms':>8s} {'ratio':>7s} {'wait p50':>9s} {'client p50':>11s}")
    for name, total, wait in rows:
        p95 = statistics.quantiles(total, n=20)[-1] if len(total) > 1 else total[0]
        client = [t - w for t, w in zip(total, wait, strict=True)]
        print(f"  {name:28s} {statistics.median(total):8.3f} {p95:8.3f} {statistics.median(total) / base:7.1f}"
              f" {statistics.median(wait):9.3f} {statistics.median(client):11.3f}")


def recall_kit(*arguments: str) -> float:
    command = [sys.executable, "-m", "recall_kit", *arguments]
    started = time.perf_counter()
    done = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
        raise SystemExit(f"command failed ({done.returncode}): recall-kit {' '.join(arguments[:4])} ...")
    return time.perf_counter() - started


def mem0_on_locomo(path: Path, bootstrap: int, latency_sample: int) -> int:
    from recall_kit import compare_results
    from recall_kit.measure.result import BenchmarkResult

    systems = {
        "mem0": ["-r", "mem0"],
        "dense": ["-r", "dense", "-o", "dense.fields=content"],
        "hybrid": ["--config", str(ROOT / "examples" / "systems" / "hybrid.toml")],
    }
    with tempfile.TemporaryDirectory(prefix="recall-kit-remote-bench-") as temporary:
        data = Path(temporary) / "locomo"
        recall_kit("dataset", "import", "locomo", str(path), str(data))
        results, wall = {}, {}
        for name, arguments in systems.items():
            out = Path(temporary) / f"{name}.json"
            wall[name] = recall_kit("eval", *arguments, "--dataset", str(data), "--metrics", ",".join(METRICS),
                                    "--latency-sample", str(latency_sample), "--json", str(out), "--no-progress")
            results[name] = BenchmarkResult.load(out)
    print(f"\nLoCoMo {path.name}: {results['mem0'].dataset.queries} queries, "
          f"{results['mem0'].dataset.memories} memories ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    for name, result in results.items():
        latency = result.latency
        print(f"  {name:7s} " + "  ".join(f"{metric} {result.mean(metric):.4f}" for metric in METRICS)
              + f"  eval wall {wall[name]:.0f} s, single-query p50 {latency.stat('p50'):.1f} ms")
    missed = 0
    for challenger in ("mem0", "hybrid"):
        comparison = compare_results([("dense", results["dense"]), (challenger, results[challenger])],
                                     metrics=list(METRICS), n_resamples=bootstrap, seed=0, strata=False)
        for row in comparison.rows:
            print(f"  {challenger} - dense {row.metric:9s} n={row.n:4d} {row.delta:+.4f} "
                  f"[{row.ci_low:+.4f}, {row.ci_high:+.4f}]  W/T/L {row.wins}/{row.ties}/{row.losses}")
            if challenger == "mem0" and row.metric == "recall@5" and (row.ci_low > 0 or row.ci_high < 0):
                missed = 1
    print("BAR mem0 - dense recall@5 CI holds 0: " + ("FAIL" if missed else "PASS"))
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=120)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--locomo", type=Path, help="a LoCoMo JSON file (locomo10.json format)")
    parser.add_argument("--bootstrap", type=int, default=10_000)
    parser.add_argument("--latency-sample", type=int, default=50)
    parser.add_argument("--skip-adapters", action="store_true")
    parser.add_argument("--quick", action="store_true", help="accepted for run_all.py; same work")
    args = parser.parse_args()
    if not args.skip_adapters:
        adapter_overhead(args.queries, args.k)
    if args.locomo is None or not args.locomo.is_file():
        print(f"bench_remote: no LoCoMo file ({args.locomo or 'none given'}); mem0 part skipped.")
        return 0
    return mem0_on_locomo(args.locomo, args.bootstrap, args.latency_sample)


if __name__ == "__main__":
    sys.exit(main())
