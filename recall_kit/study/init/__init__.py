"""`recall-kit study init`: a commented study.toml for a store (SQLite table, dataset folder, JSONL corpus)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recall_kit.errors import OptionError
from recall_kit.study.config import default_folder

#: The candidates `init` proposes beside the baseline: each leg alone, then the hybrids.
CANDIDATES: list[dict[str, Any]] = [
    {"name": "bm25", "retriever": "bm25"},
    {"name": "dense", "retriever": "dense"},
    {"name": "hybrid", "retriever": "bm25+dense", "fusion": "convex", "weights": {"bm25": 1.0, "dense": 0.7}},
    {"name": "hybrid-graph", "retriever": "bm25+dense+graph", "fusion": "convex",
     "weights": {"bm25": 1.0, "dense": 0.7, "graph": 0.25}},
]


def baseline_system(baseline: str) -> dict[str, Any]:
    """The system `--baseline NAME` names: one of the candidates `init` writes (`hybrid`: its
    recipe), or else a retriever of that name (`fts5`, the default)."""
    return next((dict(candidate) for candidate in CANDIDATES if candidate["name"] == baseline),
                {"name": baseline, "retriever": baseline})


def packaged_embedding_models() -> list[str]:
    """The embedding models installed as packages that the `dense` retriever loads by name, offline,
    beyond its default (its `packaged_models()`, when the registered retriever has one)."""
    import recall_kit.registry as registry

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
                  f"# options = {{ dense = {{ model = {toml_value(model)} }} }}"]
    return lines


def toml_value(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, dict) else (
        "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }")


def importer_options(columns: dict[str, str]) -> dict[str, Any]:
    """The sqlite importer's options from `[store]`'s columns: `sensitive_col = ""` says the table
    has no sensitivity flag (`--no-sensitive-col`); absent, the importer looks for one."""
    options: dict[str, Any] = {key: value for key, value in columns.items() if value != ""}
    if columns.get("sensitive_col") == "":
        options["no_sensitive_col"] = True
    return options


def _sqlite_lines(source: Path, columns: dict[str, str], log: Callable[[str], None] | None = None,
                  ) -> tuple[list[str], dict[str, Any]]:
    """[store]'s column mapping for an SQLite table, after reading its tables and columns and choosing
    the memory table and its columns (recall_kit.study.init.sqlite: the choices printed by `log`),
    then reading the table; the facts `init` reports (counts and column names, never text)."""
    import recall_kit.registry as registry
    from recall_kit.study.init.sqlite import choose_columns

    mapping = choose_columns(source, columns)
    if log is not None:
        for line in mapping.lines(source):
            log(line)
    columns = mapping.columns
    importer = registry.importers.create("sqlite", importer_options(columns))
    memories, counts = importer.read_memories(source)  # checks the table and every named column
    facts = {"memories": len(memories), "sensitive": counts["dropped"].get("rows_sensitive", 0),
             "importance": any("importance" in m for m in memories),
             "sensitive_column": mapping.said("sensitive"), "unmapped_columns": counts["unmapped_columns"]}
    created = next(choice for choice in mapping.choices if choice.role == "created-at")
    if created.column:
        created_said = f"Created-at column: {mapping.said('created-at')}; --created-at-col names another."
    elif created.others:
        created_said = (f"Not mapped, though it looks like a creation time: {', '.join(created.others)} "
                        f"(--created-at-col {created.others[0]}, or created_at_col = \"{created.others[0]}\" below, "
                        "maps it).")
    else:
        created_said = "Created-at column: none."
    from recall_kit.study.result import CorpusSummary
    from recall_kit.study.validate import no_memories, rows_left_out

    others = CorpusSummary("sqlite", len(memories), facts["sensitive"], rows_left_out=rows_left_out(counts))
    if not memories:  # nothing a study could run on: said now, not at the study's first step
        raise no_memories(source, others)
    lines = [f"# {facts['memories']} memories ({facts['sensitive']} sensitive rows left out"
             + (f"; {others.left_out_words()}" if others.rows_left_out else "") + ").",
             "# The sqlite importer's column mapping (study init chose what no flag named; rows whose "
             "sensitive column is true never leave the store).",
             " ".join(f"# Sensitive column: {facts['sensitive_column']}. {created_said} Columns not mapped: "
                      f"{facts['unmapped_columns']}.".split())]  # a column name holding a line break stays a comment
    for key, value in columns.items():
        comment = ("  # none: --no-sensitive-col said the table has no sensitivity flag"
                   if key == "sensitive_col" and value == "" else "")
        lines.append(f"{key} = {toml_value(value)}{comment}")
    return lines, facts


def _store_lines(kind: str, source: Path, columns: dict[str, str], base: Path,
                 log: Callable[[str], None] | None = None) -> tuple[list[str], dict[str, Any]]:
    """The [store] table, after checking the store opens (and the columns exist); counts, never text."""
    from recall_kit.study.validate import check_corpus_rows

    relative = os.path.relpath(source.resolve(), base.resolve())
    lines = ["[store]", f"{kind} = {toml_value(relative)}"]
    facts: dict[str, Any] = {}
    if kind == "sqlite":
        mapping, facts = _sqlite_lines(source, columns, log)
        lines[1:1] = mapping[:3]
        lines += mapping[3:]
    elif kind == "dataset":
        if not (source / "corpus.jsonl").is_file():
            raise OptionError(f"{source}: no corpus.jsonl (a dataset folder holds corpus.jsonl, queries.jsonl, qrels.jsonl).")
        # what the run would refuse, refused now; and the rows a study keeps, counted in the same read
        facts = {"queries": (source / "queries.jsonl").is_file() and (source / "qrels.jsonl").is_file(),
                 "memories": check_corpus_rows(source / "corpus.jsonl")}
    elif not source.is_file():
        raise OptionError(f"{source}: no such corpus file.")
    else:
        facts = {"memories": check_corpus_rows(source)}
    return lines, facts


def _evaluation_lines(facts: dict[str, Any], queries: tuple[Path, Path] | None, base: Path) -> list[str]:
    """[evaluation_set]: the store's own queries, the user's files (--queries/--qrels), or generated ones."""
    if queries is not None:
        return ["[evaluation_set]",
                f"queries = {toml_value(os.path.relpath(queries[0].resolve(), base.resolve()))}   # your queries",
                f"qrels = {toml_value(os.path.relpath(queries[1].resolve(), base.resolve()))}     # your labels of the store's ids",
                "exact = 0                          # N exact queries from the corpus alone (no system in the loop)",
                "min_queries = 50"]
    with_queries = bool(facts.get("queries"))
    return [
        "[evaluation_set]",
        'queries = "dataset"                # the folder\'s own queries.jsonl and qrels.jsonl' if with_queries else
        'queries = "generated"              # no queries yet: exact ones generated from the corpus alone',
        f"exact = {0 if with_queries else exact_default(facts)}                          # N exact queries from the corpus alone "
        "(no system in the loop)",
        "min_queries = 50",
    ]


#: Exact queries `study init` asks for when the store has no queries (at most one per memory: a
#: study run refuses more queries than the corpus can yield).
EXACT_QUERIES = 50


def exact_default(facts: dict[str, Any]) -> int:
    """The exact queries a new study asks for: `EXACT_QUERIES`, never more than the store's memories."""
    memories = facts.get("memories")
    return EXACT_QUERIES if memories is None else max(1, min(EXACT_QUERIES, int(memories)))


def render_study(kind: str, source: Path, out: Path, columns: dict[str, str] | None = None, hook_k: int = 5,
                 baseline: str = "fts5", name: str | None = None, queries: tuple[Path, Path] | None = None,
                 log: Callable[[str], None] | None = None) -> str:
    """The text of a commented study.toml for the store at `source` (`queries`: the user's queries
    and qrels files, as the sqlite importer's --queries/--qrels; `log`: where an SQLite store's
    mapping is said)."""
    if hook_k < 1:
        raise OptionError(f"--hook-k must be at least 1, got {hook_k}.")
    store, facts = _store_lines(kind, source, columns or {}, out.parent, log)
    lines = [
        f"# A recall-kit study of {source.name}: recall-kit study run {out.name}  (docs/study.md)",
        "# Every step is an artefact in the study folder with a fingerprint of its inputs: a rerun with",
        "# nothing changed does nothing; change one system and only it and what depends on it run again.",
        "",
        "[study]",
        f"name = {toml_value(name or source.stem)}",
        f"folder = {toml_value(default_folder(out))}          # named after this file: each study its own folder",
        "seed = 0",
        f"hook_k = {hook_k}                       # the top k your product reads (its memory hook)",
        f"decision_metrics = [\"recall@{hook_k}\", \"mrr@{hook_k}\"]   # decided at the hook's k",
        'exploratory_metrics = ["recall@10", "ndcg@10"]',
        f"baseline = {toml_value(baseline)}                # the system in production today",
        "resamples = 2000",
        "",
        *store,
        "",
        *_evaluation_lines(facts, queries, out.parent),
        "",
        "[judging]",
        "pool_depth = 10                    # every system's top 10 pooled",
        'judge = "qrels"                    # your labels only; or a model judge (pip install recall-kit-llm)',
        '# agreement = "my-grades.jsonl"    # your grades of a sample: kappa against the model judge',
        "",
        "# The candidates: the baseline first, then recipes (examples/systems/ holds tuned ones).",
        "[[systems]]",
        *(f"{key} = {toml_value(value)}" for key, value in baseline_system(baseline).items()),
    ]
    others = ([] if baseline == "fts5" else [{"name": "fts5", "retriever": "fts5"}]) + CANDIDATES
    for candidate in others:
        if candidate["name"] == baseline:
            continue
        lines += ["", "[[systems]]"] + [f"{key} = {toml_value(value)}" for key, value in candidate.items()]
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
        f"substrate = {toml_value(baseline_system(baseline)['retriever'].split('+')[0])}",
        '# embedding_model = "sentence-transformers/all-MiniLM-L6-v2"',
        '# priors = ["importance"]          # priors production ranks with ([] for none)',
        "",
        "[cost]",
        "latency_sample = 40",
    ]
    return "\n".join(lines) + "\n"


def init_study(out: str | Path, *, sqlite: str | Path | None = None, dataset: str | Path | None = None,
               jsonl: str | Path | None = None, columns: dict[str, str] | None = None, hook_k: int = 5,
               baseline: str = "fts5", force: bool = False, queries: str | Path | None = None,
               qrels: str | Path | None = None, log: Callable[[str], None] | None = None) -> Path:
    """Write a commented study.toml at `out` for one store; an existing file is kept unless `force`
    (and a link standing at `out` is replaced, never written through). An SQLite store's tables and
    columns are read first and the mapping chosen is said to `log` once the file is written."""
    from recall_kit.study.validate import check_init_choices, write_checked_study

    given = [(kind, Path(path)) for kind, path in (("sqlite", sqlite), ("dataset", dataset), ("jsonl", jsonl))
             if path is not None]
    if len(given) != 1:
        raise OptionError("Name one store: --sqlite FILE, --dataset DIR or --jsonl FILE.")
    if columns and given[0][0] != "sqlite":
        raise OptionError("Column names (--table, --id-col, ...) go with --sqlite.")
    if (queries is None) != (qrels is None):
        raise OptionError("--queries FILE and --qrels FILE go together (your queries and your labels of the store's ids).")
    pair = None
    if queries is not None and qrels is not None:
        pair = (Path(queries), Path(qrels))
        for flag, path in zip(("--queries", "--qrels"), pair, strict=True):
            if not path.is_file():
                raise OptionError(f"{flag} {path}: no such file.")
    target = Path(out)
    if target.exists() and not target.is_symlink() and not target.is_file():  # --force replaces a file, not these
        raise OptionError(f"{target}: is not a regular file (a folder, a device or a pipe); study init writes a "
                          "study file: name a file path such as study.toml.")
    if (target.exists() or target.is_symlink()) and not force:
        raise OptionError(f"{target}: exists; choose another path or pass --force.")
    kind, source = given[0]
    said: list[str] = []  # the mapping chosen, said once the file is written (a refusal is one line)
    text = render_study(kind, source, target, columns, hook_k, baseline, queries=pair, log=said.append)  # the store checked first
    check_init_choices(baseline, hook_k, baseline_system(baseline))  # then the flags, in init's words
    write_checked_study(target, text, baseline)
    if log is not None:
        for line in said:
            log(line)
    return target
