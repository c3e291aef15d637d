"""`recall-kit new-plugin`: write a working plugin package skeleton (no cookiecutter needed)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from recall_kit.errors import RecallKitError

KINDS: tuple[str, ...] = ("retriever", "fusion", "metric", "reporter")

_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_PREFIX = "recall-kit-"


class ScaffoldError(RecallKitError):
    """A bad plugin name or kind, or a folder that already exists."""


@dataclass(frozen=True)
class PluginNames:
    """The names of a new plugin, all derived from the one the user gave."""

    #: The registered name: `--retriever NAME`, `--fusion NAME`, `NAME@10`, `--report NAME`.
    name: str
    #: The distribution: recall-kit-NAME.
    distribution: str
    #: The import name: recall_kit_NAME (dashes become underscores).
    module: str
    #: CamelCase stem for class names: my-thing -> MyThing.
    class_stem: str


def plugin_names(name: str) -> PluginNames:
    """Check `name` (lowercase letters, digits, single dashes) and derive the other names.

    A leading `recall-kit-` is dropped, so `recall-kit-tfidf` and `tfidf` give the same package.
    """
    bare = name.removeprefix(_PREFIX)
    if not _NAME.match(bare):
        raise ScaffoldError(
            f"Bad plugin name {name!r}: use lowercase letters, digits and single dashes "
            "(e.g. 'tfidf' or 'my-retriever')."
        )
    return PluginNames(
        name=bare,
        distribution=_PREFIX + bare,
        module="recall_kit_" + bare.replace("-", "_"),
        class_stem="".join(part.capitalize() for part in bare.split("-")),
    )


def create_plugin(name: str, kind: str = "retriever", directory: str | Path = ".") -> Path:
    """Write the package `recall-kit-NAME/` under `directory` and return its path.

    The package holds a pyproject.toml with the `recall_kit` entry point, the module, a README and
    tests that pass as written (for a retriever, the conformance suite too). An existing folder is
    never overwritten.
    """
    if kind not in KINDS:
        raise ScaffoldError(f"Unknown plugin kind {kind!r}. Available: {', '.join(KINDS)}.")
    names = plugin_names(name)
    _refuse_a_taken_name(names.name, kind)
    root = Path(directory) / names.distribution
    if root.exists():
        raise ScaffoldError(f"{root} already exists; choose another name or --dir (nothing was written).")
    files: dict[str, str | tuple[str, ...]] = {
        "pyproject.toml": "pyproject.toml.in",
        "README.md": ("readme_head.md", f"readme_{kind}.md", "readme_tail.md"),
        f"{names.module}/__init__.py": f"{kind}.py",
        f"{names.module}/py.typed": (),
        f"tests/test_{names.module}.py": f"{kind}_tests.py",
    }
    if kind == "retriever":
        files["tests/test_conformance.py"] = "conformance_tests.py"
    rendered = {path: render_template(sources, names, kind) for path, sources in files.items()}
    for relative, text in rendered.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def _refuse_a_taken_name(name: str, kind: str) -> None:
    """A name already registered for `kind` (or one a recall-kit plugin provides, installed or
    not) would clash once the new package is installed: the plugin registered first keeps it and
    the new one's is left out, so the scaffold refuses it up front."""
    from recall_kit.plugins import PROVIDED_BY
    from recall_kit.registry import REGISTRIES

    registry = REGISTRIES[kind + "s"]
    owner = registry.all()[name].plugin if name in registry.names() else PROVIDED_BY.get(name)
    if owner is None and kind == "metric":
        from recall_kit.measure.score.metric_names import metric_aliases

        family = metric_aliases().get(name)
        owner = registry.all()[family].plugin if family in registry.names() else None
    if owner is not None:
        raise ScaffoldError(
            f"{kind.capitalize()} {name!r} is already registered by {owner!r}: choose another name "
            "(nothing was written)."
        )


#: The templates, package data: a working plugin named `my-plugin` of each kind, checked by ruff and
#: mypy with the rest of recall_kit. Rendering replaces its names (and `{{kind}}` in the text files).
TEMPLATES = "templates/plugin"
_PLACEHOLDERS = re.compile(r"recall_kit_my_plugin|recall-kit-my-plugin|my-plugin|MyPlugin|my_plugin|\{\{kind\}\}")


def render_template(sources: str | tuple[str, ...], names: PluginNames, kind: str) -> str:
    """The template file(s) `sources` (joined), with the plugin's names in place of my-plugin's."""
    folder = resources.files("recall_kit").joinpath(TEMPLATES)
    parts = (sources,) if isinstance(sources, str) else sources
    text = "".join(folder.joinpath(part).read_text(encoding="utf-8") for part in parts)
    values = {
        "recall_kit_my_plugin": names.module,
        "recall-kit-my-plugin": names.distribution,
        "my-plugin": names.name,
        "MyPlugin": names.class_stem,
        "my_plugin": names.module.removeprefix("recall_kit_"),
        "{{kind}}": kind,
    }
    # One pass, so a name that contains "my-plugin" is never replaced twice.
    return _PLACEHOLDERS.sub(lambda match: values[match.group()], text)
