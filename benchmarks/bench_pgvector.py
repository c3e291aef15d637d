"""pgvector on the embedded server (pgserver: PostgreSQL 16, pgvector 0.6.2): HNSW's recall@k and
latency against exact search (a sequential scan, the alternative) over an ef_search sweep, and what
a filter applied after the index scan costs in recall (filtered top-k), against NULL embeddings and
a partial index.

Vectors as in bench_ann.py: N x 384 unit float32 rows in N/50 clusters (cosine to the centre ~0.7);
queries are stored vectors plus noise, renormalised. Half the rows are marked hidden (sensitive).
Each measurement is the SQL statement pgvector's retriever runs, one query per round trip.

    python benchmarks/bench_pgvector.py            # 20,000 rows
    python benchmarks/bench_pgvector.py --quick    # 5,000 rows

Bars (exit 1 when missed): HNSW recall@20 >= 0.90 at ef_search=100; the NULL-embedding and
partial-index filters keep recall >= 0.90 (the loss is the WHERE-after-index case's alone).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "recall-kit-postgres"))

MISSED: list[str] = []
K = 20


def bar(name: str, value: float, target: str, ok: bool) -> None:
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def clustered(rows: int, queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(1, rows // 50), 384)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    matrix = centres[rng.integers(0, len(centres), rows)] + rng.normal(scale=0.05, size=(rows, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    picked = matrix[rng.integers(0, rows, queries)] + rng.normal(scale=0.015, size=(queries, 384)).astype(np.float32)
    picked /= np.linalg.norm(picked, axis=1, keepdims=True)
    return matrix.astype(np.float32), picked.astype(np.float32)


def run(connection, table: str, where: str, vectors: list[str], exact: bool) -> tuple[list[set[int]], float]:
    """Each query's top K ids and the median milliseconds per query."""
    statement = (f"SELECT id FROM {table} WHERE embedding IS NOT NULL{where} "
                 "ORDER BY embedding <=> %s::vector LIMIT %s")
    answers, times = [], []
    with connection.transaction():
        if exact:
            connection.execute("SET LOCAL enable_indexscan = off")
        for vector in vectors:
            started = time.perf_counter()
            rows = connection.execute(statement, (vector, K)).fetchall()
            times.append((time.perf_counter() - started) * 1000.0)
            answers.append({row[0] for row in rows})
    return answers, float(np.median(times))


def recall(found: list[set[int]], truth: list[set[int]]) -> float:
    return sum(len(a & b) for a, b in zip(found, truth, strict=True)) / sum(len(b) for b in truth)


def plan(connection, table: str, where: str, vector: str) -> str:
    rows = connection.execute(f"EXPLAIN SELECT id FROM {table} WHERE embedding IS NOT NULL{where} "
                              "ORDER BY embedding <=> %s::vector LIMIT 20", (vector,)).fetchall()
    scan = next((row[0] for row in rows if "Scan" in row[0]), rows[0][0])
    return scan.strip().lstrip("-> ").split("  (")[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 rows instead of 20,000")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rows = args.rows or (5_000 if args.quick else 20_000)
    import psycopg
    from recall_kit_postgres.server import EmbeddedServer
    from recall_kit_postgres.vector import vector_text

    matrix, queries = clustered(rows, args.queries)
    hidden = np.random.default_rng(1).random(rows) < 0.5
    vectors = [vector_text(row) for row in queries]
    server = EmbeddedServer({"maintenance_work_mem": "512MB"})
    started = time.perf_counter()
    dsn = server.start()
    print(f"pgvector benchmark: {rows} rows x 384, {args.queries} queries, k={K}; server started in "
          f"{time.perf_counter() - started:.2f} s")
    try:
        with psycopg.connect(dsn, autocommit=True, prepare_threshold=None) as connection:
            connection.execute("CREATE EXTENSION vector")
            print("pgvector", connection.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0])
            for table, null_hidden in (("items", False), ("items_null", True)):
                connection.execute(f"CREATE TABLE {table} (id integer, hidden boolean, embedding vector(384))")
                with connection.cursor() as cursor, cursor.copy(f"COPY {table} (id, hidden, embedding) FROM STDIN") as copy:
                    for index in range(rows):
                        gone = null_hidden and hidden[index]
                        copy.write_row((index, bool(hidden[index]), None if gone else vector_text(matrix[index])))
                started = time.perf_counter()
                connection.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)")
                print(f"HNSW build (m=16, ef_construction=64) on {table}: {time.perf_counter() - started:.2f} s")
                connection.execute(f"ANALYZE {table}")

            truth, exact_ms = run(connection, "items", "", vectors, exact=True)
            print(f"\nef_search sweep (no filter); exact = sequential scan, {exact_ms:.3f} ms per query")
            print("| ef_search | recall@20 vs exact | p50 ms | speed-up vs exact | plan |")
            print("| --- | --- | --- | --- | --- |")
            at_100 = 0.0
            for ef_search in (10, 40, 100, 200):
                connection.execute(f"SET hnsw.ef_search = {ef_search}")
                found, ms = run(connection, "items", "", vectors, exact=False)
                value = recall(found, truth)
                at_100 = value if ef_search == 100 else at_100
                print(f"| {ef_search} | {value:.4f} | {ms:.3f} | {exact_ms / ms:.1f}x | "
                      f"{plan(connection, 'items', '', vectors[0])} |")
            bar("pgvector HNSW recall@20 at ef_search=100", at_100, ">= 0.90", at_100 >= 0.90)

            connection.execute("SET hnsw.ef_search = 40")
            print("\nfiltered top-k: half the rows hidden, ef_search=40")
            print("| how hidden rows are kept out | recall@20 vs exact (same filter) | rows returned per query | p50 ms | plan |")
            print("| --- | --- | --- | --- | --- |")
            cases = [("NULL embedding (not in the graph)", "items_null", ""),
                     ("WHERE NOT hidden after the index scan", "items", " AND NOT hidden")]
            results = {}
            for label, table, where in cases:
                truth_f, _ = run(connection, table, where, vectors, exact=True)
                found, ms = run(connection, table, where, vectors, exact=False)
                results[label] = recall(found, truth_f)
                returned = np.mean([len(answer) for answer in found])
                print(f"| {label} | {results[label]:.4f} | {returned:.1f} | {ms:.3f} | {plan(connection, table, where, vectors[0])} |")
            connection.execute("CREATE INDEX items_visible ON items USING hnsw (embedding vector_cosine_ops) WHERE NOT hidden")
            connection.execute("ANALYZE items")
            label, where = "partial index WHERE NOT hidden", " AND NOT hidden"
            truth_f, _ = run(connection, "items", where, vectors, exact=True)
            found, ms = run(connection, "items", where, vectors, exact=False)
            results[label] = recall(found, truth_f)
            returned = np.mean([len(answer) for answer in found])
            print(f"| {label} | {results[label]:.4f} | {returned:.1f} | {ms:.3f} | {plan(connection, 'items', where, vectors[0])} |")
            kept = min(results["NULL embedding (not in the graph)"], results[label])
            bar("pgvector filtered recall@20, NULL embedding / partial index", kept, ">= 0.90", kept >= 0.90)
    finally:
        server.stop()
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
