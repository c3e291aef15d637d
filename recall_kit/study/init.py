"""`recall-kit study init`: a commented study.toml for a store (SQLite table, dataset folder, JSONL corpus)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from recall_kit.errors import OptionError

#: The candidates `init` proposes beside the baseline: each leg alone, then the hybrids.
CANDIDATES: list[dict[str, Any]] = [
    {"name": "bm25", "retriever": "bm25"},
    {"name": "dense", "retriever": "dense"},
    {"name": "hybrid", "retriever": "bm25+dense", "fusion": "convex", "weights": {"bm25": 1.0, "dense": 0.7}},
    {"name": "hybrid-graph", "retriever": "bm25+dense+graph", "fusion": "convex",
     "weights": {"bm25": 1.0, "dense": 0.7, "graph": 0.25}},
]


def packaged_embedding_models() -> list[str]:
    """The embedding models installed as packages that the `dense` retriever loads by name, offline,
    beyond its default (its `packaged_models()`, when the registered retriever has one)."""
    from recall_kit import registry

    dense = registry.retrievers.all().get("dense")
    lister = getattr(dense.obj, "packaged_models", None) if dense is not None else None
    return list(lister()) if callable(lister) else []


def _packaged_candidates() -> list[str]:
    """A commented candidate per packaged model found: offered, not run (each costs an embedding)."""
    lines = []
    for model in packaged_embedding_models():
        lines += ["", f"# Installed here: {model}, a stronger embedder than the default at several times",
                  "# its compute (docs/models.md). Uncomment to weigh it as a candidate:",
                  "# [[systems]]", f'# name = "dense-{model}"', '# retriever = "dense"',
                  f"# options = {{ dense = {{ model = {_value(model)} }} }}"]
    return lines


def _value(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, dict) else (
        "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in value.items()) + " }")


def _store_lines(kind: str, source: Path, columns: dict[str, str], base: Path) -> tuple[list[str], dict[str, Any]]:
    """The [store] table, after checking the store opens (and the columns exist); counts, never text."""
    relative = os.path.relpath(source.resolve(), base.resolve())
    lines = ["[store]", f"{kind} = {_value(relative)}"]
    facts: dict[str, Any] = {}
    if kind == "sqlite":
        from recall_kit import registry

        importer = registry.importers.create("sqlite", dict(columns))
        memories, counts = importer.read_memories(source)  # checks the table and every named column
        facts = {"memories": len(memories), "sensitive": counts["dropped"].get("rows_sensitive", 0),
                 "importance": any("importance" in m for m in memories)}
        lines += [f"{key} = {_value(value)}" for key, value in columns.items()]
        lines.insert(1, "# The sqlite importer's column mapping; rows whose sensitive column is true never leave the store.")
        lines.insert(1, f"# {facts['memories']} memories ({facts['sensitive']} sensitive rows left out).")
    elif kind == "dataset":
        if not (source / "corpus.jsonl").is_file():
            raise OptionError(f"{source}: no corpus.jsonl (a dataset folder holds corpus.jsonl, queries.jsonl, qrels.jsonl).")
        facts = {"queries": (source / "queries.jsonl").is_file() and (source / "qrels.jsonl").is_file()}
    elif not source.is_file():
        raise OptionError(f"{source}: no such corpus file.")
    return lines, facts


def render_study(kind: str, source: Path, out: Path, columns: dict[str, str] | None = None, hook_k: int = 5,
                 baseline: str = "fts5", name: str | None = None) -> str:
    """The text of a commented study.toml for the store at `source`."""
    if hook_k < 1:
        raise OptionError(f"--hook-k must be at least 1, got {hook_k}.")
    store, facts = _store_lines(kind, source, columns or {}, out.parent)
    with_queries = bool(facts.get("queries"))
    lines = [
        f"# A recall-kit study of {source.name}: recall-kit study run {out.name}  (docs/study.md)",
        "# Every step is an artefact in the study folder with a fingerprint of its inputs: a rerun with",
        "# nothing changed does nothing; change one system and only it and what depends on it run again.",
        "",
        "[study]",
        f"name = {_value(name or source.stem)}",
        'folder = "study-out"',
        "seed = 0",
        f"hook_k = {hook_k}                       # the top k your product reads (its memory hook)",
        f"decision_metrics = [\"recall@{hook_k}\", \"mrr@{hook_k}\"]   # decided at the hook's k",
        'exploratory_metrics = ["recall@10", "ndcg@10"]',
        f"baseline = {_value(baseline)}                # the system in production today",
        "resamples = 2000",
        "",
        *store,
        "",
        "[evaluation_set]",
        'queries = "dataset"                # the folder\'s own queries.jsonl and qrels.jsonl' if with_queries else
        'queries = "generated"              # no queries yet: exact ones generated from the corpus alone',
        f"exact = {0 if with_queries else 50}                          # N exact queries from the corpus alone (no system in the loop)",
        "min_queries = 50",
        "",
        "[judging]",
        "pool_depth = 10                    # every system's top 10 pooled",
        'judge = "qrels"                    # your labels only; or a model judge (pip install recall-kit-llm)',
        '# agreement = "my-grades.jsonl"    # your grades of a sample: kappa against the model judge',
        "",
        "# The candidates: the baseline first, then recipes (examples/systems/ holds tuned ones).",
        "[[systems]]",
        f"name = {_value(baseline)}",
        f"retriever = {_value(baseline)}",
    ]
    for candidate in CANDIDATES:
        if candidate["name"] == baseline:
            continue
        lines += ["", "[[systems]]"] + [f"{key} = {_value(value)}" for key, value in candidate.items()]
    lines += _packaged_candidates()
    lines += [
        "",
        "[ablation]",
        'system = ""                        # empty: the best hybrid',
        "",
        "[sweep]",
        'system = "hybrid"',
        'grid = ["dense=0.35,0.7,1.4"]',
        "holdout = 0.5                      # chosen on one half, reported on the other",
        'guards = ["ndcg@10"]',
        "",
        "[production]                       # what production runs: named so the study can say where it differs",
        f"substrate = {_value(baseline)}",
        '# embedding_model = "sentence-transformers/all-MiniLM-L6-v2"',
        '# priors = ["importance"]          # priors production ranks with ([] for none)',
        "",
        "[cost]",
        "latency_sample = 40",
    ]
    return "\n".join(lines) + "\n"


def init_study(out: str | Path, *, sqlite: str | Path | None = None, dataset: str | Path | None = None,
               jsonl: str | Path | None = None, columns: dict[str, str] | None = None, hook_k: int = 5,
               baseline: str = "fts5", force: bool = False) -> Path:
    """Write a commented study.toml at `out` for one store; an existing file is kept unless `force`."""
    from recall_kit.fileio import write_text_atomic

    given = [(kind, Path(path)) for kind, path in (("sqlite", sqlite), ("dataset", dataset), ("jsonl", jsonl))
             if path is not None]
    if len(given) != 1:
        raise OptionError("Name one store: --sqlite FILE, --dataset DIR or --jsonl FILE.")
    if columns and given[0][0] != "sqlite":
        raise OptionError("Column names (--table, --id-col, ...) go with --sqlite.")
    target = Path(out)
    if target.exists() and not force:
        raise OptionError(f"{target}: exists; choose another path or pass --force.")
    kind, source = given[0]
    write_text_atomic(target, render_study(kind, source, target, columns, hook_k, baseline))
    return target
