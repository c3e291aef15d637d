"""The registry: Registry.create (look up, build options, instantiate) and every kind listable."""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from recall_kit import Fusion, FusionRequest, hookimpl, registry
from recall_kit.cli import app
from recall_kit.errors import OptionError, UnknownFusionError
from recall_kit.testing import registered_plugin


class Scaled(Fusion):
    """Scores the first leg's hits times a factor."""

    @dataclass(frozen=True)
    class Options:
        factor: float = 1.0

    def fuse(self, request: FusionRequest):  # type: ignore[no-untyped-def]
        return []


class _FusionPlugin:
    @hookimpl
    def register_fusions(self, register):  # type: ignore[no-untyped-def]
        register("scaled", Scaled)


def test_create_builds_options_from_strings_and_instantiates():
    with registered_plugin(_FusionPlugin(), name="fusion-plugin"):
        made = registry.fusions.create("scaled", {"factor": "2.5"})
        assert isinstance(made, Scaled) and made.options.factor == 2.5
        assert registry.fusions.create("scaled").options.factor == 1.0
        with pytest.raises(OptionError, match="factor"):
            registry.fusions.create("scaled", {"factr": "2"})
        with pytest.raises(UnknownFusionError, match="Available: scaled"):
            registry.fusions.create("scaledd")


def test_list_shows_generators_and_a_kind_a_plugin_declares():
    spec_module = type(sys)("widget_specs")
    exec(textwrap.dedent('''
        from recall_kit.hookspecs import hookspec
        @hookspec
        def register_gadgets(register):
            "Register gadgets."
    '''), spec_module.__dict__)

    class Declarer:
        @hookimpl
        def add_hookspecs(self, plugin_manager):  # type: ignore[no-untyped-def]
            plugin_manager.add_hookspecs(spec_module)

        @hookimpl
        def register_gadgets(self, register):  # type: ignore[no-untyped-def]
            register("sprocket", object)

    runner = CliRunner()
    done = runner.invoke(app, ["list", "generators"])
    assert done.exit_code == 0 and "exact" in done.output
    with registered_plugin(Declarer(), name="widget-plugin"):
        done = runner.invoke(app, ["list", "gadgets"])
        assert done.exit_code == 0, done.output
        assert "sprocket" in done.output and "widget-plugin" in done.output
        assert "gadgets" in registry.registries()
    assert "gadgets" not in registry.registries()
    done = runner.invoke(app, ["list", "gadgets"])
    assert done.exit_code == 2 and "Unknown kind 'gadgets'" in done.output


def test_options_to_dict_applies_a_fields_redact_function():
    import dataclasses

    from recall_kit.options import options_to_dict

    @dataclasses.dataclass(frozen=True)
    class Options:
        dsn: str | None = dataclasses.field(default=None, metadata={"redact": lambda text: text.split(":")[0] + ":***"})
        depth: int = 3

    assert options_to_dict(Options(dsn="user:secret", depth=4)) == {"dsn": "user:***", "depth": 4}
    assert options_to_dict(Options()) == {"dsn": None, "depth": 3}  # None is never passed to it
