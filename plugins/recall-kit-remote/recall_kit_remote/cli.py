"""The `recall-kit remote probe` command: one search call to a live system (an MCP tool or an
HTTP endpoint), printed as its answer's shape, the candidate paths for ids, text and scores, and
the options that read them (see probe.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

import typer

remote_app = typer.Typer(name="remote", help="Look at a live system before evaluating it.", no_args_is_help=True)


@remote_app.command("probe")
def probe(
    adapter: Annotated[str, typer.Argument(help="mcp (a tool on an MCP server) or http (a search endpoint).")],
    query: Annotated[str, typer.Option("--query", "-q", help="A sample query the system has memories for.")],
    option: Annotated[list[str] | None, typer.Option(
        "--option", "-o", metavar="KEY=VALUE",
        help="An option of the adapter, as for eval: mcp.command=..., mcp.tool=search; repeat.")] = None,
    k: Annotated[int, typer.Option("--k", "-k", help="k sent with the query.")] = 10,
) -> None:
    """Call the system once with --query and print the answer's shape, the candidate paths for the
    hits' ids, text and scores, and the -o options that would read them (ids and numbers shown,
    never a memory's text). Exits 2 when the answer holds no list of hits with ids."""
    from recall_kit.plugin import Corpus, OptionError, PluginRunError, build_options, mask_secrets
    from recall_kit_remote.base import QueryFailed
    from recall_kit_remote.probe import report

    retriever_class = _adapter(adapter)
    raw: dict[str, str] = {}
    for assignment in option or []:
        key, sep, value = assignment.partition("=")
        key = key.strip().removeprefix(f"{adapter}.")
        if not sep or not key:
            raise OptionError(f"Bad option {assignment!r}: expected KEY=VALUE (e.g. {adapter}.tool=search).")
        raw[key] = value
    if k < 1:
        raise OptionError(f"--k must be at least 1, got {k}.")
    try:  # bytes that are no UTF-8 in the shell's argument arrive as lone surrogates
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise OptionError("--query is not valid UTF-8 text (a byte in it is no character).") from None
    options = build_options(f"retriever {adapter!r}", retriever_class.Options, raw)
    # A probe adds nothing and lists nothing: one search call.
    options = replace(options, **{"add_tool" if adapter == "mcp" else "add_url": "", "sensitive_listing": ""})
    retriever = retriever_class(options)
    try:
        retriever.build_index(Corpus([]))
        where = mask_secrets(getattr(getattr(retriever, "_session", None), "where", None) or f"{adapter} {options.url}")
        try:
            payloads = retriever.raw_answers(query, k)
        except QueryFailed as failure:  # a timeout, an HTTP status, an oversize answer, the tool's error
            raise PluginRunError(f"remote probe: {where}: the search failed: {failure}.") from None
    finally:
        retriever.close()
    lines, found = report(where, payloads, adapter)
    if not found:  # the answer's shape on stdout, the reason on stderr, and exit 2: nothing to read
        for line in lines[:-1]:
            typer.echo(line)
        typer.echo(lines[-1], err=True)
        raise typer.Exit(2)
    for line in lines:
        typer.echo(line)


def _adapter(name: str) -> Any:
    from recall_kit.plugin import OptionError

    if name == "mcp":
        from recall_kit_remote.mcp_tool import MCPRetriever

        return MCPRetriever
    if name == "http":
        from recall_kit_remote.http import HTTPRetriever

        return HTTPRetriever
    raise OptionError(f"remote probe: unknown adapter {name!r}; choose mcp or http (a command's answers are "
                      "its own lines: print one with the program itself).")
