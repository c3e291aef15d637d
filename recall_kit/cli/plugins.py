"""Commands about what is installed: plugins, list, new-plugin."""

# Annotations are evaluated here (no `from __future__ import annotations`): typer reads these
# signatures at every start, and would otherwise compile each annotation string again.

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from recall_kit.errors import RecallKitError


def plugins_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List installed plugins, what each registers, and any that failed to load."""
    import recall_kit.registry as registry

    listing = registry.plugins_listing()
    if as_json:
        typer.echo(json.dumps(listing, indent=2))
        return
    typer.echo(registry.plugins_table(listing["plugins"]))
    for name, message in listing["errors"].items():
        typer.echo(f"failed to load: {name}: {message}", err=True)


def list_command(
    kind: Annotated[str, typer.Argument(help="retrievers, fusions, metrics, reporters, importers, generators, or a kind a plugin adds (extractors); or options NAME.")],
    name: Annotated[str | None, typer.Argument(metavar="NAME", help="With 'options': the retriever, fusion or importer whose options to show (-o NAME.OPTION=VALUE).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the registered names of one kind, with the plugin that provides each; 'list options
    dense' shows one plugin's options with their types and defaults."""
    import recall_kit.registry as registry
    from recall_kit.errors import UnknownNameError

    if kind == "options":
        _list_options(name, as_json)
        return
    kinds = registry.registries()
    if kind not in kinds:
        error = UnknownNameError(kind, list(kinds))
        raise RecallKitError(str(error).replace("name", "kind", 1).replace(" See 'recall-kit plugins'.", ""))
    entries = kinds[kind].all()
    headers = ["name", "plugin", "description"]
    rows: list[list[Any]] = [[name, reg.plugin, reg.description] for name, reg in entries.items()]
    if kind == "metrics":  # the trec_eval / ir_measures names each metric also answers to
        headers.insert(1, "aliases")
        for row, reg in zip(rows, entries.values()):
            row.insert(1, ", ".join(alias.replace("{k}", "k") for alias in reg.obj.aliases))
    if as_json:
        typer.echo(json.dumps([dict(zip(headers, row, strict=True)) for row in rows], indent=2))
        return
    from tabulate import tabulate

    typer.echo(tabulate(rows, headers=headers, tablefmt="simple"))


def _list_options(name: str | None, as_json: bool) -> None:
    from tabulate import tabulate

    import recall_kit.registry as registry

    if name is None:
        raise RecallKitError("Give a name: recall-kit list options dense (see 'recall-kit list retrievers').")
    found = registry.options_of(name)
    if as_json:
        typer.echo(json.dumps([{"kind": kind, "name": name, "options": [
            {"option": o, "type": t, "default": d, "meaning": m} for o, t, d, m in rows]}
            for kind, rows in found], indent=2, default=str))
        return
    for index, (kind, rows) in enumerate(found):
        how = "after OUT: --OPTION VALUE" if kind == "importer" else f"-o {name}.OPTION=VALUE"
        typer.echo(("\n" if index else "") + f"Options of the {kind} {name!r} ({how}):")
        spell = (lambda o: f"--{o.replace('_', '-')}") if kind == "importer" else (lambda o: f"{name}.{o}")
        typer.echo(tabulate([[spell(o), t, repr(d), m] for o, t, d, m in rows],
                            headers=["option", "type", "default", "meaning"], tablefmt="simple") if rows else "none")


def new_plugin_command(
    name: Annotated[str, typer.Argument(help="The plugin's name: lowercase letters, digits, dashes (e.g. tfidf).")],
    kind: Annotated[str, typer.Option("--kind", help="retriever, fusion, metric or reporter.")] = "retriever",
    directory: Annotated[Path, typer.Option("--dir", help="Folder to create recall-kit-NAME/ in.")] = Path("."),
) -> None:
    """Write a working plugin package (pyproject, module, README, passing tests) to start from."""
    from recall_kit.scaffold import create_plugin

    root = create_plugin(name, kind, directory)
    typer.echo(f"Created {root}")
    typer.echo(f"Next: cd {root} && pip install -e '.[test]' && pytest")
