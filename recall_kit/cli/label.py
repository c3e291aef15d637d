"""`recall-kit label`: a local page to grade the pairs that decide a study's verdicts (recall_kit.label)."""

# Annotations are evaluated here (no `from __future__ import annotations`): typer reads these
# signatures at every start.

from pathlib import Path
from typing import Annotated

import typer


def label_command(
    study: Annotated[Path | None, typer.Argument(help="A study that has run: its study.toml or its folder.")] = None,
    assessor: Annotated[str, typer.Option("--assessor", help="Your name: it names your file (each assessor has one).")] = "me",
    out: Annotated[Path | None, typer.Option("--out", help="Your grades file (qrels JSONL). Default: STUDY/labels/ASSESSOR.jsonl, or beside --pool.")] = None,
    pool: Annotated[Path | None, typer.Option("--pool", help="Label a pool file (`recall-kit pool`'s) instead of a study.")] = None,
    dataset: Annotated[Path | None, typer.Option("--dataset", help="With --pool: the dataset folder it pools.")] = None,
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: any free one).")] = 0,
    scale: Annotated[str | None, typer.Option("--scale", help="The grades offered: binary (0, 1) or graded (0-3). Default: the study's [judging] scale, else binary.")] = None,
) -> None:
    """Open a page on 127.0.0.1 (a random token in its URL) to grade (query, memory) pairs with the
    keyboard, the pairs that can flip a verdict first; grades are written to your file as you give
    them, so closing the tab or Ctrl-C loses nothing. Rerun the study to take them."""
    from recall_kit.label.server import check_port, serve
    from recall_kit.label.session import open_session

    check_port(port)
    session = open_session(study, assessor, out=out, pool=pool, dataset=dataset, scale=scale)
    from recall_kit.curate.assessor import doubts, outside_queries

    for line in (session.material.dropped_line(),
                 doubts(f"label: {session.out.path.name}", session.out.regraded,
                        outside_queries(session.out.grades, session.queries), "what this page labels")):
        if line:
            typer.echo(line, err=True)
    serve(session, port, announce=lambda line: typer.echo(line, err=True))
