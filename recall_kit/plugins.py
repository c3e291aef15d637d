"""The one plugin manager: built-in plugins, entry-point discovery, allowlist and tracing."""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pluggy

import recall_kit.hookspecs as hookspecs
from recall_kit.errors import RecallKitError

ENTRY_POINT_GROUP = "recall_kit"

DEFAULT_PLUGINS: tuple[str, ...] = (
    "recall_kit.default_plugins.metrics",
    "recall_kit.default_plugins.reporters",
    "recall_kit.default_plugins.importers",
    "recall_kit.default_plugins.generators",
    "recall_kit.default_plugins.judges",
)



class _PluginManager(pluggy.PluginManager):
    """pluggy's manager counting registrations, so a registry cached on what is registered can tell
    a change even when a new plugin object reuses a freed one's id()."""

    generation = 0

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        registered = super().register(plugin, name)
        self.generation += 1
        return registered

    def unregister(self, plugin: Any | None = None, name: str | None = None) -> Any | None:
        removed = super().unregister(plugin, name)
        self.generation += 1
        return removed


pm = _PluginManager("recall_kit")
pm.add_hookspecs(hookspecs)

#: Plugins that failed to import or register: plugin name -> "ExceptionType: message".
load_errors: dict[str, str] = {}

_loaded = False


class PluginError(RecallKitError):
    """A plugin is malformed (for example it implements a hook that has no specification)."""


def _allowlist() -> set[str] | None:
    raw = os.environ.get("RECALL_KIT_LOAD_PLUGINS")
    if raw is None:
        return None
    return {name.strip() for name in raw.split(",") if name.strip()}


def report_plugin_failure(name: str, what: str, error: BaseException) -> None:
    """Record a broken plugin (shown by `recall-kit plugins`) and say so once on stderr; the rest go on."""
    try:
        detail = f"{type(error).__name__}: {' '.join(str(error).split())[:300]}".rstrip(": ")
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises
        detail = f"{type(error).__name__} (its message could not be read)"
    if isinstance(error, SystemExit):
        detail = f"SystemExit({error.code!r})"
    if what != "load" and not what.startswith("register_") and not isinstance(error, RecallKitError):
        # An observer (on_index_built) works on memory text: its message may quote it.
        from recall_kit.errors import describe_plugin_exception

        detail = describe_plugin_exception(error)
    key = name if what == "load" else f"{name} ({what})"
    if key in load_errors:
        return
    load_errors[key] = detail
    verb = "failed to load" if what == "load" else f"failed in {what}"
    print(f"recall-kit: plugin {name!r} {verb} ({detail}); continuing without it.", file=sys.stderr)


def report_name_clash(name: str, hook: str, clashing: str, error: BaseException) -> None:
    """Record that plugin `name` lost the name `clashing` to a plugin registered before it, and
    say so once on stderr (`error` names both); the rest of what it registered is kept."""
    key = f"{name} ({hook}: {clashing})"
    if key in load_errors:
        return
    load_errors[key] = f"{type(error).__name__}: {error}"
    print(f"recall-kit: {error}.", file=sys.stderr)


def forget_plugin_failures(name: str) -> None:
    """Drop what was recorded about plugin `name` failing (a test plugin unregistered again)."""
    for key in [key for key in load_errors if key == name or key.startswith(f"{name} (")]:
        del load_errors[key]


def call_each(
    hook_name: str,
    arguments: Mapping[str, Any] | Callable[[str], Mapping[str, Any]],
    accept: Callable[[str, Any], None] | None = None,
) -> list[tuple[str, Any]]:
    """Call the implementations of `hook_name` one by one, in registration order (built-ins first),
    so a broken plugin is named once on stderr (and in `recall-kit plugins`) and left out while the
    others still run: the one place the host calls plugin hooks one at a time.

    `arguments` are the hook's keyword arguments, or a function of the plugin's name returning them
    (so a `register` callback knows its plugin). `accept(plugin, result)`, when given, runs right
    after each call and raises to refuse what the plugin did (a name another plugin owns); it is
    then reported and left out like a plugin that raised. What a plugin prints goes to stderr,
    keeping stdout for the report. Ctrl-C passes through, and so does any error of a built-in (a
    bug in recall-kit). Returns (plugin name, result) for each implementation kept.
    """
    caller = getattr(pm.hook, hook_name)
    results: list[tuple[str, Any]] = []
    for impl in caller.get_hookimpls():  # pluggy keeps them in registration order (it calls them last first)
        plugin_name = impl.plugin_name
        given = arguments(plugin_name) if callable(arguments) else arguments
        try:
            with contextlib.redirect_stdout(sys.stderr):
                result = impl.function(**{argname: given[argname] for argname in impl.argnames})
            if accept is not None:
                accept(plugin_name, result)
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # sys.exit() included: the host and the other plugins go on
            if plugin_name in DEFAULT_PLUGINS:
                raise
            report_plugin_failure(plugin_name, hook_name, error)
            continue
        results.append((plugin_name, result))
    return results


def _command_names(infos: list[Any]) -> list[str]:
    """The names of a typer app's commands or groups, as typer derives them."""
    names = []
    for info in infos:
        name = info.name
        if not name and getattr(info, "typer_instance", None) is not None:
            name = info.typer_instance.info.name
        if not name and getattr(info, "callback", None) is not None:
            name = info.callback.__name__.lower().replace("_", "-")
        names.append(str(name))
    return names


def add_plugin_commands(app: Any) -> None:
    """Let each plugin add its commands to the typer `app` (`register_commands`), one at a time: a
    plugin that raises, or adds a command that shadows one already there (`eval`), is named once
    on stderr and its commands are left out; the rest still add theirs."""
    before: list[Any] = []

    def arguments(plugin_name: str) -> dict[str, Any]:
        before[:] = [len(app.registered_commands), len(app.registered_groups),
                     _command_names(app.registered_commands + app.registered_groups)]
        return {"app": app}

    def accept(plugin_name: str, result: Any) -> None:
        commands, groups, names = before
        added = _command_names(app.registered_commands[commands:] + app.registered_groups[groups:])
        shadowed = sorted(set(added) & set(names)) or sorted({name for name in added if added.count(name) > 1})
        if shadowed:
            del app.registered_commands[commands:]
            del app.registered_groups[groups:]
            raise PluginError(f"its command {shadowed[0]!r} would shadow the one already there; left out")

    call_each("register_commands", arguments, accept)


def _load_entry_points(allowed: set[str] | None) -> None:
    # In the order they were installed (then by name): on a name two plugins register, the one
    # registered first keeps it, so a plugin installed later cannot take over `fts5` or `rrf`.
    for entry_point in sorted(
        importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: (_installed_at(ep), ep.name)
    ):
        distribution = entry_point.dist.name if entry_point.dist else entry_point.name
        if allowed is not None and not ({entry_point.name, distribution} & allowed):
            continue
        if pm.has_plugin(distribution):
            continue  # the same distribution seen twice on sys.path
        try:
            # A plugin that prints at import must not corrupt `--report json` on stdout.
            with contextlib.redirect_stdout(sys.stderr):
                module = entry_point.load()
                pm.register(module, name=distribution)
        except BaseException as error:  # sys.exit() or KeyboardInterrupt raised by a plugin's import
            # A broken plugin must not take the others (or the host) down with it.
            if pm.has_plugin(distribution):
                pm.unregister(name=distribution)
            report_plugin_failure(distribution, "load", error)


def _installed_at(entry_point: importlib.metadata.EntryPoint) -> float:
    """When the entry point's distribution was installed: the time pip wrote its RECORD (the
    last file an install writes); a distribution without one counts as installed last."""
    files = entry_point.dist.files if entry_point.dist is not None else None
    for file in files or ():
        if file.name == "RECORD" and file.parent.name.endswith(".dist-info"):
            with contextlib.suppress(OSError):
                return Path(str(file.locate())).stat().st_mtime
    return float("inf")


def _drop_unspecified_hooks() -> None:
    """A hook implementation with no specification (a misspelled hook name): the plugin is
    reported by name and unregistered; a built-in with one is a bug and fails loudly."""
    while True:
        try:
            pm.check_pending()
            return
        except pluggy.PluginValidationError as error:
            name = pm.get_name(error.plugin) if error.plugin is not None else None
            if name is None or name in DEFAULT_PLUGINS:
                raise PluginError(f"Plugin {name or '?'!r} implements a hook with no specification: {error}") from None
            pm.unregister(name=name)
            report_plugin_failure(name, "load", PluginError(f"implements a hook with no specification: {error}"))


#: Which distribution provides each retriever, fusion, query generator and judge of the plugins in
#: this repository, so an error can say what to install. tests/test_provided_by.py checks this table, both ways, against
#: what every plugins/*/ (and examples/recall-kit-example/) entry point registers: it cannot drift.
PROVIDED_BY: dict[str, str] = {
    "bm25": "recall-kit-bm25",
    "dense": "recall-kit-dense",
    "fts5": "recall-kit-fts5",
    "graph": "recall-kit-graph",
    "pg-fts": "recall-kit-postgres",
    # registered when recall-kit-dense is installed too: the `vector` extra brings it
    "pgvector": "recall-kit-postgres[vector]",
    "pg-hybrid": "recall-kit-postgres[vector]",
    "example": "recall-kit-example",
    "rrf": "recall-kit-fusion",
    "convex": "recall-kit-fusion",
    "exact-bonus": "recall-kit-fusion",
    "importance": "recall-kit-fusion",
    "wsum": "recall-kit-fusion",
    "combsum": "recall-kit-fusion",
    "combmnz": "recall-kit-fusion",
    "combmax": "recall-kit-fusion",
    "combmin": "recall-kit-fusion",
    "combanz": "recall-kit-fusion",
    "borda": "recall-kit-fusion",
    "isr": "recall-kit-fusion",
    "log-isr": "recall-kit-fusion",
    "rescore": "recall-kit-fusion",
    "http": "recall-kit-remote",
    "command": "recall-kit-remote",
    "mcp": "recall-kit-remote",
    "mem0": "recall-kit-mem0",
    "llm-embed": "recall-kit-llm",
    "llm-paraphrase": "recall-kit-llm",
    "llm-multihop": "recall-kit-llm",
    "llm": "recall-kit-llm",
    "embedding": "recall-kit-dense",
    "combined": "recall-kit-dense",
}


def hidden_by_allowlist() -> list[str]:
    """Installed plugin distributions that `RECALL_KIT_LOAD_PLUGINS` kept from loading."""
    allowed = _allowlist()
    if allowed is None:
        return []
    hidden = set()
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        distribution = entry_point.dist.name if entry_point.dist else entry_point.name
        if not ({entry_point.name, distribution} & allowed):
            hidden.add(distribution)
    return sorted(hidden)


def install_hints(names: list[str]) -> list[str]:
    """Sentences saying how to get the (unregistered) `names`: the distribution that provides each
    (pip, and the folder when run from a clone of the repository), whether `RECALL_KIT_LOAD_PLUGINS`
    hides it, or whether it failed to load. Names no known plugin provides get no sentence."""
    from pathlib import Path

    hidden = hidden_by_allowlist()
    to_install: dict[str, list[str]] = {}
    to_allow: dict[str, list[str]] = {}
    sentences = []
    for name in names:
        requirement = PROVIDED_BY.get(name)
        if requirement is None:
            continue
        distribution = requirement.partition("[")[0]
        if distribution in hidden:
            to_allow.setdefault(distribution, []).append(name)
        elif distribution in load_errors:
            sentences.append(f"{distribution} (which provides {name!r}) failed to load: {load_errors[distribution]}")
        else:
            to_install.setdefault(requirement, []).append(name)
    if to_allow:
        sentences.insert(0, (
            f"RECALL_KIT_LOAD_PLUGINS={os.environ.get('RECALL_KIT_LOAD_PLUGINS', '')!r} hides the installed "
            + ", ".join(f"{dist} ({', '.join(provided)})" for dist, provided in to_allow.items())
            + (": add it to the list, or unset it" if len(to_allow) == 1 else ": add them to the list, or unset it")
        ))
    if to_install:
        provides = "; ".join(f"{dist} provides {', '.join(map(repr, provided))}" for dist, provided in to_install.items())

        def quoted(requirement: str) -> str:  # `[extra]` is a glob pattern to a shell
            return f"'{requirement}'" if "[" in requirement else requirement

        command = "pip install " + " ".join(map(quoted, to_install))
        # From a checkout, wheels work in any environment (a folder install needs the host from an index).
        in_plugins = [requirement for requirement in to_install
                      if (Path("plugins") / requirement.partition("[")[0] / "pyproject.toml").is_file()]
        if len(in_plugins) == len(to_install):
            command += f" (in this clone: make wheels, then pip install --find-links dist {' '.join(map(quoted, in_plugins))})"
        sentences.insert(0, f"{provides}: {command}")
    if not sentences and hidden and names:
        sentences.append(
            f"RECALL_KIT_LOAD_PLUGINS={os.environ.get('RECALL_KIT_LOAD_PLUGINS', '')!r} hides installed "
            f"plugins: {', '.join(hidden)}"
        )
    return sentences


def load_plugins() -> pluggy.PluginManager:
    """Register the built-ins and every installed plugin, once; return the plugin manager.

    `RECALL_KIT_LOAD_PLUGINS=a,b` loads only the named plugins (entry-point or distribution
    names; empty loads none). `RECALL_KIT_TRACE_PLUGINS=1` prints every hook call to stderr.
    A plugin that fails to import, or implements a hook that has no specification, is left out
    and reported (`recall-kit plugins`); the others load.
    """
    global _loaded
    if _loaded:
        return pm
    _loaded = True
    for module_name in DEFAULT_PLUGINS:
        if not pm.has_plugin(module_name):
            pm.register(importlib.import_module(module_name), name=module_name)
    _load_entry_points(_allowlist())
    pm.hook.add_hookspecs.call_historic(kwargs={"plugin_manager": pm})
    _drop_unspecified_hooks()
    if os.environ.get("RECALL_KIT_TRACE_PLUGINS"):
        pm.trace.root.setwriter(sys.stderr.write)
        pm.enable_tracing()
    return pm


def plugin_infos() -> list[dict[str, Any]]:
    """One dict per registered plugin: name, version (for distributions), hooks, built-in or not."""
    load_plugins()
    dist_versions = {
        dist: version for dist, version in _distribution_versions() if pm.has_plugin(dist)
    }
    infos = []
    for name, plugin in sorted(pm.list_name_plugin(), key=lambda pair: str(pair[0])):
        if plugin is None:
            continue
        hooks = sorted(caller.name for caller in pm.get_hookcallers(plugin) or [])
        infos.append(
            {
                "name": name,
                "version": dist_versions.get(name),
                "builtin": name in DEFAULT_PLUGINS,
                "hooks": hooks,
            }
        )
    return infos


def _distribution_versions() -> list[tuple[str, str]]:
    pairs = []
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.dist is not None:
            pairs.append((entry_point.dist.name, entry_point.dist.version))
    return pairs
