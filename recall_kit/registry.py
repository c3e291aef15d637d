"""Name -> object lookups built from the `register_*` hooks, with type checks and duplicate detection."""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import recall_kit.errors as errors
from recall_kit.options import build_options
from recall_kit.plugins import (
    PROVIDED_BY,
    call_each,
    install_hints,
    load_errors,
    load_plugins,
    plugin_infos,
    pm,
    report_name_clash,
)
from recall_kit.types import Fusion, Importer, Metric, QueryGenerator, RelevanceJudge, Reporter, Retriever

T = TypeVar("T")


@dataclass(frozen=True)
class Registration(Generic[T]):
    """A registered object, its name, and the plugin that registered it."""

    name: str
    obj: T
    plugin: str
    kind: str = "plugin object"

    def call(self, hook: str, function: Callable[..., Any], *args: Any) -> Any:
        """Run the registered object's `function` (its `render`, its `run`): whatever it raises but
        Ctrl-C and recall-kit's own errors becomes one line naming the plugin and the method,
        the message withheld unless --debug (it may quote memory text)."""
        try:
            with contextlib.redirect_stdout(sys.stderr):  # stdout is for the report
                return function(*args)
        except (errors.RecallKitError, KeyboardInterrupt):
            raise
        except BaseException as error:  # SystemExit included
            raise errors.PluginRunError(
                f"{self.kind.capitalize()} {self.name!r} (plugin {self.plugin!r}) failed in {hook}: "
                f"{errors.describe_plugin_exception(error)}"
            ) from error

    @property
    def description(self) -> str:
        text = getattr(self.obj, "description", "") or inspect.getdoc(self.obj) or ""
        return text.strip().splitlines()[0] if text.strip() else ""


class Registry(Generic[T]):
    """Everything registered through one `register_<kind>s` hook, rebuilt when plugins change.

    Plugins may build registries for hooks of their own (e.g. extractors) with this class.
    """

    def __init__(
        self,
        kind: str,
        hook_name: str,
        check: Callable[[str, Any], str | None],
        unknown_error: type[errors.UnknownNameError] = errors.UnknownNameError,
    ) -> None:
        self.kind = kind
        self.hook_name = hook_name
        self._check = check
        self._unknown_error = unknown_error
        self._cache_key: int | None = None
        self._entries: dict[str, Registration[T]] = {}

    def _build(self) -> dict[str, Registration[T]]:
        entries: dict[str, Registration[T]] = {}
        trace = bool(os.environ.get("RECALL_KIT_TRACE_PLUGINS"))
        mine: dict[str, dict[str, Registration[T]]] = {}  # per plugin, kept only if its whole call succeeds

        # Each implementation gets its own `register`, so a registration knows its plugin.
        def arguments(plugin_name: str) -> dict[str, Any]:
            own = mine.setdefault(plugin_name, {})

            def register(name: str, obj: Any) -> None:
                if not isinstance(name, str) or not name or any(c in name for c in "+=, "):
                    raise errors.RegistrationError(
                        f"Plugin {plugin_name!r} registered a {self.kind} with a bad name {name!r}:"
                        " names are non-empty and contain no '+', '=', ',' or spaces."
                    )
                problem = self._check(name, obj)
                if problem:
                    raise errors.RegistrationError(
                        f"Plugin {plugin_name!r} registered {self.kind} {name!r}: {problem}"
                    )
                earlier = own.get(name)
                if earlier is not None:
                    raise errors.DuplicateNameError(
                        f"Plugin {plugin_name!r} registered {self.kind} {name!r} twice."
                    )
                if trace:
                    print(f"recall-kit: {plugin_name} registered {self.kind} {name!r}", file=sys.stderr)
                own[name] = Registration(name, obj, plugin_name, self.kind)

            return {"register": register}

        def accept(plugin_name: str, _result: Any) -> None:
            # A name another plugin registered first (built-ins first, then installed plugins in
            # the order they were installed) stays with it; only that name of this plugin is
            # left out, said once naming both, and the rest of what this plugin registered works.
            for name, registration in mine.get(plugin_name, {}).items():
                if name in entries:
                    keeper = entries[name].plugin
                    report_name_clash(plugin_name, self.hook_name, name, errors.DuplicateNameError(
                        f"{self.kind} {name!r} is registered by both {keeper!r} and {plugin_name!r}; "
                        f"{keeper!r} (registered first) keeps it; the one {plugin_name!r} registered is left out"
                    ))
                else:
                    entries[name] = registration

        # A plugin whose registration is malformed (not a class, a name another plugin owns) or
        # that raises is named once on stderr and left out; the other plugins' names still work.
        call_each(self.hook_name, arguments, accept)
        return entries

    def all(self) -> dict[str, Registration[T]]:
        """Every registration by name, sorted by name."""
        load_plugins()
        key = pm.generation  # bumped by every register and unregister
        if key != self._cache_key:
            self._entries = dict(sorted(self._build().items()))
            self._cache_key = key
        return self._entries

    def names(self) -> list[str]:
        return list(self.all())

    def get(self, name: str) -> Registration[T]:
        """The registration for `name`, or an Unknown...Error listing what is registered."""
        entries = self.all()
        if name not in entries:
            raise unknown_names_error([(self, name)])
        return entries[name]

    def build_options(self, name: str, raw: Mapping[str, Any] | None = None) -> Any:
        """`name`'s Options from raw values: strings (from the CLI) coerced to the field types,
        unknown keys and bad values refused with the list of what exists."""
        registered: Any = self.get(name).obj  # a registered class, with its Options dataclass
        return build_options(f"{self.kind} {name!r}", registered.Options, dict(raw or {}))

    def create(self, name: str, raw_options: Mapping[str, Any] | None = None) -> Any:
        """Look `name` up, build its options and instantiate it: the one way the host makes a
        registered class (fusions, importers, query generators)."""
        registered: Any = self.get(name).obj  # a registered class: Class(options)
        return registered(self.build_options(name, raw_options))


def unknown_names_error(missing: list[tuple[Registry[Any], str]]) -> errors.UnknownNameError:
    """One error naming every unregistered name at once (`fts5+dense+graph --fusion rrf` with only
    graph installed names fts5, dense and rrf), each with a close registered name when there is one,
    what to install for it, and whether RECALL_KIT_LOAD_PLUGINS hides it."""
    import difflib

    parts = []
    for kind_registry, name in missing:
        close = [] if name in PROVIDED_BY else difflib.get_close_matches(name, kind_registry.names(), n=1, cutoff=0.6)
        parts.append(f"{kind_registry.kind} {name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    kinds = list(dict.fromkeys(kind_registry for kind_registry, _ in missing))
    available = "; ".join(
        f"{kind_registry.kind}s: {', '.join(kind_registry.names()) or '(none installed)'}"
        for kind_registry in kinds
    )
    hints = "".join(f" {hint}." for hint in install_hints([name for _, name in missing]))
    first_registry, first_name = missing[0]
    if len(missing) == 1:
        listing = ", ".join(first_registry.names()) or "(none installed)"
        message = f"Unknown {parts[0]}. Available: {listing}.{hints} See 'recall-kit plugins'."
    else:
        message = f"Unknown {', '.join(parts)}. Available {available}.{hints} See 'recall-kit plugins'."
    return first_registry._unknown_error(first_name, first_registry.names(), message)


def _check_retriever(name: str, obj: Any) -> str | None:
    if not inspect.isclass(obj):
        return "expected a class (a recall_kit.Retriever subclass), got " + type(obj).__name__
    if issubclass(obj, Retriever) or hasattr(obj, "search") or hasattr(obj, "retrieve"):
        return None
    return "expected a recall_kit.Retriever subclass, or a class with search() or retrieve()"


def _subclass_check(base: type) -> Callable[[str, Any], str | None]:
    def check(name: str, obj: Any) -> str | None:
        if inspect.isclass(obj) and issubclass(obj, base):
            return None
        return f"expected a subclass of recall_kit.{base.__name__}, got {obj!r}"

    return check


def _check_metric(name: str, obj: Any) -> str | None:
    if not isinstance(obj, Metric):
        return f"expected a recall_kit.Metric, got {type(obj).__name__}"
    if obj.name != name:
        return f"registered under {name!r} but the Metric is named {obj.name!r}"
    for alias in obj.aliases:
        if (
            not isinstance(alias, str)
            or not alias
            or any(c in alias for c in "+, ")
            or "{k}" in alias.removesuffix("{k}")
            or alias.replace("{k}", "").strip() == ""
        ):
            return f"bad alias {alias!r}: non-empty, no '+', ',' or spaces, '{{k}}' (the cutoff) only at the end"
        if alias.endswith("{k}") and obj.cutoff == "none":
            return f"alias {alias!r} has a cutoff but the metric takes none"
        if not alias.endswith("{k}") and obj.cutoff == "required":
            return f"alias {alias!r} has no cutoff '{{k}}' but the metric needs one"
    return None


retrievers: Registry[Any] = Registry(
    "retriever", "register_retrievers", _check_retriever, errors.UnknownRetrieverError
)
fusions: Registry[type[Fusion]] = Registry(
    "fusion", "register_fusions", _subclass_check(Fusion), errors.UnknownFusionError
)
metrics: Registry[Metric] = Registry(
    "metric", "register_metrics", _check_metric, errors.UnknownMetricError
)
reporters: Registry[type[Reporter]] = Registry(
    "reporter", "register_reporters", _subclass_check(Reporter), errors.UnknownReporterError
)
importers: Registry[type[Importer]] = Registry(
    "importer", "register_importers", _subclass_check(Importer), errors.UnknownImporterError
)

def _check_generator(name: str, obj: Any) -> str | None:
    if not (isinstance(obj, type) and issubclass(obj, QueryGenerator)):
        return f"expected a subclass of recall_kit.QueryGenerator, got {obj!r}"
    if not obj.stratum:
        return "its class sets no `stratum`"
    return None


#: Every query generator registered through ``register_query_generators``.
generators: Registry[type[QueryGenerator]] = Registry(
    "query generator", "register_query_generators", _check_generator, errors.UnknownGeneratorError
)

#: Every relevance judge registered through ``register_judges`` (``judge --judge NAME``).
judges: Registry[type[RelevanceJudge]] = Registry(
    "judge", "register_judges", _subclass_check(RelevanceJudge), errors.UnknownJudgeError
)

#: The registries `recall-kit list KIND` shows, by plural name.
REGISTRIES: dict[str, Registry[Any]] = {
    "retrievers": retrievers,
    "fusions": fusions,
    "metrics": metrics,
    "reporters": reporters,
    "importers": importers,
    "generators": generators,
    "judges": judges,
}


def _any_object(name: str, obj: Any) -> str | None:
    return None


def registries() -> dict[str, Registry[Any]]:
    """Every kind `recall-kit list` and `recall-kit plugins` show: the host's registries, plus one
    for each `register_<kind>(register)` hook a plugin declared itself (the graph plugin's
    `register_extractors`), listed under `<kind>` without a type check (the plugin checks its own)."""
    load_plugins()
    kinds = dict(REGISTRIES)
    known_hooks = {registry.hook_name for registry in kinds.values()}
    for plugin in pm.get_plugins():
        for caller in pm.get_hookcallers(plugin) or []:
            spec = caller.spec
            if (caller.name.startswith("register_") and caller.name not in known_hooks
                    and spec is not None and list(spec.argnames) == ["register"]):
                kind = caller.name.removeprefix("register_")
                kinds.setdefault(kind, Registry(kind.rstrip("s"), caller.name, _any_object))
    return dict(sorted(kinds.items()))


def installed_plugins() -> list[dict[str, Any]]:
    """What `recall-kit plugins` shows: each plugin's name, version, hooks, and under `registers`
    the names it registered, by kind."""
    provides: dict[str, dict[str, list[str]]] = {}  # plugin -> kind -> names
    for kind, kind_registry in registries().items():
        for name, registration in kind_registry.all().items():
            provides.setdefault(registration.plugin, {}).setdefault(kind, []).append(name)
    infos = plugin_infos()
    for info in infos:
        info["registers"] = provides.get(str(info["name"]), {})
    return infos


def plugins_listing() -> dict[str, Any]:
    """What `recall-kit plugins --json` prints: `plugins` (see `installed_plugins`) and `errors`,
    each entry point that failed to load with its one-line reason."""
    plugins = installed_plugins()  # loads the plugins, so the errors are known
    return {"plugins": plugins, "errors": dict(load_errors)}


def plugins_table(plugins: list[dict[str, Any]]) -> str:
    """`recall-kit plugins`: one row per plugin, its version ("built-in" for recall-kit's own), and
    what it registers by kind (or, when it registers nothing, the hooks it implements)."""
    from tabulate import tabulate

    rows = []
    for info in plugins:
        registered: dict[str, list[str]] = info["registers"]
        registers = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in registered.items())
        version = info["version"] or ("built-in" if info["builtin"] else "")
        rows.append([info["name"], version, registers or ", ".join(info["hooks"])])
    return str(tabulate(rows, headers=["plugin", "version", "registers"], tablefmt="simple"))


def options_of(name: str) -> list[tuple[str, list[tuple[str, str, Any, str]]]]:
    """What `recall-kit list options NAME` shows: for each kind that registers `name` (a retriever,
    a fusion, an importer...), its options as `(option, type, default, meaning)` rows. An unknown
    name raises UnknownNameError listing every name that takes options."""
    from recall_kit.errors import UnknownNameError
    from recall_kit.options import describe_options

    found = []
    named: set[str] = set()
    for kind, kind_registry in registries().items():
        for registered_name, registration in kind_registry.all().items():
            options_class = getattr(registration.obj, "Options", None)
            if options_class is None:
                continue
            named.add(registered_name)
            if registered_name == name:
                found.append((kind.rstrip("s"), describe_options(options_class)))
    if not found:
        raise UnknownNameError(name, sorted(named))
    return found
