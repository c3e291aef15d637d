"""`recall-kit study init|run|status`: from a memory store to a decision document (recall_kit.study)."""

# Annotations are evaluated here (no `from __future__ import annotations`): typer reads these
# signatures at every start.

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from recall_kit.cli.style import ClickStyleGroup

if TYPE_CHECKING:
    from recall_kit.study.result import StudyResult

study_app = typer.Typer(cls=ClickStyleGroup, help="Start here: from your store to a decision document.",
                        no_args_is_help=True, rich_markup_mode=None)


@study_app.command("init")
def study_init(
    out: Annotated[Path, typer.Argument(help="The study file to write.")] = Path("study.toml"),
    sqlite: Annotated[Path | None, typer.Option("--sqlite", help="An SQLite memory store.")] = None,
    dataset: Annotated[Path | None, typer.Option("--dataset", help="A dataset folder (corpus.jsonl; queries and qrels if any).")] = None,
    jsonl: Annotated[Path | None, typer.Option("--jsonl", help="A corpus.jsonl with no queries.")] = None,
    table: Annotated[str | None, typer.Option("--table", help="With --sqlite: the memories table.")] = None,
    id_col: Annotated[str | None, typer.Option("--id-col", help="With --sqlite: the id column.")] = None,
    text_col: Annotated[str | None, typer.Option("--text-col", help="With --sqlite: the text column.")] = None,
    sensitive_col: Annotated[str | None, typer.Option("--sensitive-col", help="With --sqlite: rows true here never leave the store (a column that looks sensitive, such as is_sensitive, is looked for when none is named).")] = None,
    no_sensitive_col: Annotated[bool, typer.Option("--no-sensitive-col", help="With --sqlite: the table has no sensitivity flag, though a column's name looks like one.")] = False,
    scope_col: Annotated[str | None, typer.Option("--scope-col", help="With --sqlite: the scope column (a user or conversation).")] = None,
    queries: Annotated[Path | None, typer.Option("--queries", help="Your queries (recall-kit JSONL), with --qrels: the evaluation set instead of generated queries.")] = None,
    qrels: Annotated[Path | None, typer.Option("--qrels", help="Your labels of the store's ids (recall-kit qrels JSONL), with --queries.")] = None,
    category_col: Annotated[str | None, typer.Option("--category-col", help="With --sqlite: the category column.")] = None,
    tags_col: Annotated[str | None, typer.Option("--tags-col", help="With --sqlite: the tags column.")] = None,
    importance_col: Annotated[str | None, typer.Option("--importance-col", help="With --sqlite: the importance column.")] = None,
    created_at_col: Annotated[str | None, typer.Option("--created-at-col", help="With --sqlite: the creation time column.")] = None,
    hook_k: Annotated[int, typer.Option("--hook-k", help="The top k your product reads: the decision metrics are recall@k and MRR@k.")] = 5,
    baseline: Annotated[str, typer.Option("--baseline", help="The system in production today: a retriever (fts5) or one of the candidates init writes (bm25, dense, hybrid, hybrid-graph).")] = "fts5",
    force: Annotated[bool, typer.Option("--force", help="Replace an existing study file.")] = False,
    retriever: Annotated[str | None, typer.Option("--retriever", help="A running system as the baseline: http, mcp or command (recall-kit-remote), with -o LEG.KEY=VALUE.")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="With --retriever: its options, LEG.KEY=VALUE (e.g. http.url=...).")] = None,
    snapshot: Annotated[str | None, typer.Option("--snapshot", help="With --retriever: list the memories from the service with this importer (http, mcp) instead of --dataset.")] = None,
    snapshot_from: Annotated[Path | None, typer.Option("--snapshot-from", help="With --snapshot: the folder holding queries.jsonl and qrels.jsonl.")] = None,
    snapshot_option: Annotated[list[str] | None, typer.Option("--snapshot-option", help="With --snapshot: an importer option, KEY=VALUE (e.g. url=http://.../memories).")] = None,
) -> None:
    """Write a commented study.toml for a store: the candidates, strata, judge, holdout, guards and
    the hook's k. Nothing from the store is copied into it (counts only). With --retriever, the
    running system is the baseline (`live`)."""
    from recall_kit.errors import OptionError
    from recall_kit.study.init import init_study

    live = {"-o/--option": bool(option), "--snapshot": snapshot is not None,
            "--snapshot-from": snapshot_from is not None, "--snapshot-option": bool(snapshot_option)}
    store = {"--sqlite": sqlite is not None, "--jsonl": jsonl is not None, "--queries": queries is not None,
             "--qrels": qrels is not None, "--no-sensitive-col": no_sensitive_col, "--baseline": baseline != "fts5",
             **{f"--{name.replace('_', '-')}": value is not None for name, value in (
                 ("table", table), ("id_col", id_col), ("text_col", text_col), ("sensitive_col", sensitive_col),
                 ("category_col", category_col), ("tags_col", tags_col), ("importance_col", importance_col),
                 ("created_at_col", created_at_col), ("scope_col", scope_col))}}
    if retriever is not None:
        _refuse_unused(store, "with --retriever (the running system is the baseline, on --dataset or --snapshot)")
        if snapshot is None:
            _refuse_unused({k: v for k, v in live.items() if k.startswith("--snapshot-")}, "without --snapshot")
        _init_live(out, retriever, option, dataset, snapshot, snapshot_from, snapshot_option, hook_k, force)
        return
    _refuse_unused(live, "without --retriever")
    if sensitive_col and no_sensitive_col:
        raise OptionError("--sensitive-col and --no-sensitive-col contradict each other; give one.")
    columns = {key: value for key, value in (
        ("table", table), ("id_col", id_col), ("text_col", text_col), ("sensitive_col", sensitive_col),
        ("category_col", category_col), ("tags_col", tags_col), ("importance_col", importance_col),
        ("created_at_col", created_at_col), ("scope_col", scope_col)) if value}
    if no_sensitive_col:
        columns["sensitive_col"] = ""
    path = init_study(out, sqlite=sqlite, dataset=dataset, jsonl=jsonl, columns=columns, hook_k=hook_k,
                      baseline=baseline, force=force, queries=queries, qrels=qrels, log=typer.echo)
    typer.echo(f"Wrote {path}; next: recall-kit study run {path}")


def _refuse_unused(given: dict[str, bool], where: str) -> None:
    """OptionError naming the flags that were given but mean nothing `where` (none: nothing)."""
    from recall_kit.errors import OptionError

    unused = [flag for flag, present in given.items() if present]
    if len(unused) == 1:
        raise OptionError(f"{unused[0]} has no effect {where}; leave it out.")
    if unused:
        raise OptionError(f"{', '.join(unused)} have no effect {where}; leave them out.")


def _init_live(out: Path, retriever: str, option: list[str] | None, dataset: Path | None, snapshot: str | None,
               snapshot_from: Path | None, snapshot_option: list[str] | None, hook_k: int, force: bool) -> None:
    """`study init --retriever ...`: the live system as the baseline (recall_kit.study.init.live)."""
    from recall_kit.errors import OptionError
    from recall_kit.study.init.live import init_live_study

    pairs = [entry.partition("=") for entry in snapshot_option or []]
    if any(not sep or not key for key, sep, _ in pairs):
        raise OptionError("--snapshot-option takes KEY=VALUE (e.g. url=http://127.0.0.1:8767/memories).")
    path = init_live_study(out, retriever, option, dataset=dataset, snapshot=snapshot, snapshot_from=snapshot_from,
                           snapshot_options={key.replace("-", "_"): value for key, _, value in pairs},
                           hook_k=hook_k, force=force)
    typer.echo(f"Wrote {path}; next: recall-kit study run {path}")


@study_app.command("run")
def study_run(
    study: Annotated[Path, typer.Argument(help="The study file (study.toml), or its folder (or the study folder it writes).")],
) -> None:
    """Run the study: every step whose inputs changed, then the decision document (markdown, HTML,
    JSON) in the study folder. Interrupted, it finishes only what is missing when run again."""
    from recall_kit.study import run_study
    from recall_kit.study.config import load_study, shown_path

    result, _ = run_study(study, log=lambda line: typer.echo(line, err=True))
    folder = load_study(study).folder
    for line in _bottom_line(result):
        typer.echo(line)
    typer.echo(f"Document: {shown_path(folder / 'study.md')} (also study.html, study.json)")


def _bottom_line(result: "StudyResult") -> list[str]:
    from recall_kit.study.document import bottom_line

    return bottom_line(result)


@study_app.command("status")
def study_status_command(
    study: Annotated[Path, typer.Argument(help="The study file (study.toml), or its folder (or the study folder it writes).")],
) -> None:
    """Say, for each step, whether it is done, stale (and why), missing, or pending (a run recomputes
    it only if a step it reads comes out different). A run recomputes exactly the stale and missing
    steps, and the pending ones whose inputs change. Exit 1 unless all are done."""
    from recall_kit.study import study_status

    states = study_status(study)
    for state in states:
        typer.echo(f"{state.state:8} {state.name}" + (f"  ({state.why})" if state.why else ""))
    sure = [state.name for state in states if state.state in ("stale", "missing")]
    maybe = [state.name for state in states if state.state == "pending"]
    if sure or maybe:
        typer.echo(f"a run recomputes: {', '.join(sure) or 'nothing for certain'}"
                   + (f"; and, if their inputs come out different: {', '.join(maybe)}" if maybe else ""))
    if any(state.state != "done" for state in states):
        raise typer.Exit(1)
