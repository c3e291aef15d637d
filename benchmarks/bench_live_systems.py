"""Benchmark real live memory systems side by side with recall-kit's legs, through the CLI.

1. The reference MCP memory server (@modelcontextprotocol/server-memory, installed by `make` into
   .node/), filled through `create_entities` and searched through `search_nodes` (a whole-query
   substring match, rank-only), against `fts5`, on the example store: recall@10 and MRR with
   paired 95% bootstrap CIs.
2. With --locomo: the same on the LoCoMo dev conversations (one server and memory file per
   conversation, `{scope}` in the command), and with --mem0 also one `compare` of mem0, the
   reference server and examples/systems/hybrid.toml (baseline: mem0), recall@5 and recall@10.

    python benchmarks/bench_live_systems.py --out results/live [--locomo ../shared/data/locomo-dev.json] [--mem0]

Result files go to --out (ids and numbers only); the LoCoMo dataset is imported there too, so
keep --out out of the repository's tracked files (results/ is ignored). Prints each comparison.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "memories"
SERVER = ROOT / ".node" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
HYBRID = ROOT / "examples" / "systems" / "hybrid.toml"
CREATE_ENTITIES = '{"entities": [{"name": "{id}", "entityType": "memory", "observations": ["{content}"]}]}'


def recall_kit(*args: str) -> str:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "recall_kit", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        sys.exit(f"recall-kit {' '.join(args[:2])} failed: {done.stderr.strip().splitlines()[-1:]}")
    print(f"  recall-kit {' '.join(args[:3])} ... {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return done.stdout


def reference_server(dataset: Path, out: Path, name: str, stores: Path) -> Path:
    """Eval the reference server on `dataset`, filled from it (a fresh memory file per scope)."""
    shutil.rmtree(stores, ignore_errors=True)
    stores.mkdir(parents=True)
    command = f"env MEMORY_FILE_PATH={shlex.quote(str(stores))}/{{scope}}.jsonl node {shlex.quote(str(SERVER))}"
    result = out / f"{name}.json"
    recall_kit("eval", "--dataset", str(dataset), "-r", "mcp", "-k", "10", "--latency-sample", "50",
               "-o", f"mcp.command={command}", "-o", "mcp.tool=search_nodes",
               "-o", 'mcp.search_arguments={"query": "{text}"}', "-o", "mcp.results=entities[].name",
               "-o", "mcp.score=", "-o", "mcp.add_tool=create_entities", "-o", f"mcp.add_arguments={CREATE_ENTITIES}",
               "--json", str(result))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "live")
    parser.add_argument("--locomo", type=Path)
    parser.add_argument("--mem0", action="store_true", help="also mem0 and hybrid.toml on LoCoMo (minutes)")
    arguments = parser.parse_args()
    if not SERVER.is_file() or shutil.which("node") is None:
        sys.exit("The reference MCP memory server is not installed (run make with npm present) or node is missing.")
    out: Path = arguments.out
    out.mkdir(parents=True, exist_ok=True)
    print("example store", file=sys.stderr)
    mcp = reference_server(EXAMPLE, out, "example-mcp", out / "stores-example")
    fts5 = out / "example-fts5.json"
    recall_kit("eval", "--dataset", str(EXAMPLE), "-r", "fts5", "-k", "10", "--latency-sample", "50", "--json", str(fts5))
    print(recall_kit("compare", str(fts5), str(mcp), "--metrics", "recall@10,mrr"))
    if arguments.locomo is None:
        return
    locomo = out / "locomo-dev"
    if not (locomo / "corpus.jsonl").exists():
        recall_kit("dataset", "import", "locomo", str(arguments.locomo), str(locomo))
    print("LoCoMo dev", file=sys.stderr)
    mcp = reference_server(locomo, out, "locomo-mcp", out / "stores-locomo")
    fts5 = out / "locomo-fts5.json"
    recall_kit("eval", "--dataset", str(locomo), "-r", "fts5", "-k", "10", "--latency-sample", "50", "--json", str(fts5))
    print(recall_kit("compare", str(fts5), str(mcp), "--metrics", "recall@5,recall@10,mrr"))
    if not arguments.mem0:
        return
    mem0, hybrid = out / "locomo-mem0.json", out / "locomo-hybrid.json"
    recall_kit("eval", "--dataset", str(locomo), "-r", "mem0", "-k", "10", "--latency-sample", "50", "--json", str(mem0))
    recall_kit("eval", "--dataset", str(locomo), "--config", str(HYBRID), "-k", "10", "--latency-sample", "50",
               "--json", str(hybrid))
    print(recall_kit("compare", str(mem0), str(mcp), str(hybrid), "--metrics", "recall@5,recall@10"))


if __name__ == "__main__":
    main()
