"""Meta-test: every hook has a `### name` entry in docs/hooks.md (with its arguments) and at least
one test that names it. Hooks are read at test time: the host's specs in recall_kit.hookspecs, and
those that installed plugins add through `add_hookspecs` (recall-kit-graph's register_extractors)."""

from __future__ import annotations

import importlib.metadata
import inspect
import re
from pathlib import Path

import pluggy

from recall_kit import hookspecs
from recall_kit.plugins import ENTRY_POINT_GROUP

ROOT = Path(__file__).resolve().parents[2]
HOOKS_DOC = ROOT / "docs" / "hooks.md"
PLUGIN_SECTION = "## Hooks added by plugins"


def _spec_functions(plugin_manager: pluggy.PluginManager, module: object) -> dict[str, object]:
    return {
        name: getattr(module, name)
        for name in dir(module)
        if plugin_manager.parse_hookspec_opts(module, name) is not None
    }


def _host_hooks() -> dict[str, object]:
    return _spec_functions(pluggy.PluginManager("recall_kit"), hookspecs)


def _plugin_hooks() -> tuple[dict[str, object], dict[str, str]]:
    """Hooks that installed plugins add through add_hookspecs, by hook name; and load failures.

    Each plugin's add_hookspecs runs against a fresh plugin manager, not recall-kit's own.
    """
    added: dict[str, object] = {}
    failures: dict[str, str] = {}
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            plugin = entry_point.load()
        except Exception as error:  # noqa: BLE001 - a broken plugin is not this test's subject
            failures[entry_point.name] = f"{type(error).__name__}: {error}"
            continue
        implementation = getattr(plugin, "add_hookspecs", None)
        if implementation is None:
            continue
        recorder = pluggy.PluginManager("recall_kit")
        recorder.add_hookspecs(hookspecs)
        before = set(vars(recorder.hook))
        implementation(plugin_manager=recorder)
        for name, caller in vars(recorder.hook).items():
            if name not in before and caller.spec is not None:
                added[name] = caller.spec.function
    return added, failures


def _all_hooks() -> dict[str, object]:
    plugin_hooks, _ = _plugin_hooks()
    return {**_host_hooks(), **plugin_hooks}


def _doc_sections() -> dict[str, str]:
    """`### name` heading -> the text of its section."""
    text = HOOKS_DOC.read_text(encoding="utf-8")
    parts = re.split(r"^### ([A-Za-z_][A-Za-z0-9_]*)\s*$", text, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1].split("\n## ")[0] for i in range(1, len(parts), 2)}


def test_the_host_hooks_are_found():
    # A floor, not the list: the test reads the specs, so new hooks are checked without edits here.
    assert {"register_retrievers", "register_fusions", "register_metrics", "register_reporters",
            "register_importers", "register_commands", "on_index_built", "add_hookspecs"} <= set(_host_hooks())


def test_plugin_hooks_are_found_when_a_plugin_adds_them():
    plugin_hooks, failures = _plugin_hooks()
    names = {ep.dist.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.dist}
    if "recall-kit-graph" in names and "recall-kit-graph" not in failures:
        assert "register_extractors" in plugin_hooks


def test_every_hook_has_an_entry_in_docs_hooks_md():
    sections = _doc_sections()
    missing = sorted(set(_all_hooks()) - set(sections))
    assert not missing, f"hooks with no '### name' entry in docs/hooks.md: {missing}"


def test_every_entry_documents_the_arguments_return_and_an_example():
    sections = _doc_sections()
    problems = []
    for name, function in _all_hooks().items():
        section = sections.get(name, "")
        if not section:
            continue  # reported by the test above
        arguments = list(inspect.signature(function).parameters)  # type: ignore[arg-type]
        if not re.search(rf"def {name}\(" + r",\s*".join(rf"{a}\b[^,)]*" for a in arguments) + r"\)", section):
            problems.append(f"{name}: no signature 'def {name}({', '.join(arguments)})'")
        problems += [f"{name}: argument {a!r} not in the table" for a in arguments if f"| `{a}` |" not in section]
        if "**Returns:**" not in section:
            problems.append(f"{name}: no **Returns:**")
        if f"def {name}(" not in section.split("**Returns:**")[-1]:
            problems.append(f"{name}: no example implementation after **Returns:**")
    assert not problems, "\n".join(problems)


def test_no_entry_documents_a_hook_that_does_not_exist():
    text = HOOKS_DOC.read_text(encoding="utf-8").split(PLUGIN_SECTION)[0]
    documented = set(re.findall(r"^### ([A-Za-z_][A-Za-z0-9_]*)\s*$", text, flags=re.MULTILINE))
    stale = sorted(documented - set(_host_hooks()))
    assert not stale, f"docs/hooks.md documents host hooks that recall_kit.hookspecs lacks: {stale}"


def _test_sources() -> dict[Path, str]:
    folders = [ROOT / "tests", *sorted((ROOT / "plugins").glob("*/tests")),
               *sorted((ROOT / "examples").glob("*/tests"))]
    sources = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            if path.resolve() != Path(__file__).resolve():
                sources[path] = path.read_text(encoding="utf-8")
    return sources


def test_every_hook_is_named_by_a_test():
    sources = _test_sources()
    untested = sorted(
        name for name in _all_hooks()
        if not any(re.search(rf"\b{name}\b", text) for text in sources.values())
    )
    assert not untested, f"hooks no test under tests/ or plugins/*/tests names: {untested}"
