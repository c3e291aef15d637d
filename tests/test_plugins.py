"""The plugin host: hooks, registration checks, duplicates, broken plugins, allowlist, tracing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pluggy
import pytest
from helpers import OverlapRetriever

from recall_kit import Metric, hookimpl, registry
from recall_kit.errors import UnknownRetrieverError
from recall_kit.plugins import DEFAULT_PLUGINS, pm
from recall_kit.testing import registered_plugin

REPO = Path(__file__).resolve().parents[1]


def test_builtins_register_through_the_same_hooks():
    registry.metrics.all()
    for name in DEFAULT_PLUGINS:
        assert pm.has_plugin(name)
    assert registry.metrics.get("recall").plugin == "recall_kit.default_plugins.metrics"
    assert {"table", "json", "markdown", "csv"} <= set(registry.reporters.names())


def test_registered_plugin_is_found_and_removed(overlap_plugin):
    assert registry.retrievers.get("overlap").obj is OverlapRetriever
    assert registry.retrievers.get("overlap").plugin == "overlap-plugin"


def test_unregistered_after_the_block():
    with registered_plugin(_Plugin("x1", OverlapRetriever), name="temp"):
        assert "x1" in registry.retrievers.names()
    with pytest.raises(UnknownRetrieverError) as error:
        registry.retrievers.get("x1")
    assert "Unknown retriever 'x1'. Available:" in str(error.value)
    assert "See 'recall-kit plugins'." in str(error.value)


class _Plugin:
    def __init__(self, name: str, obj: object) -> None:
        self.name, self.obj = name, obj

    @hookimpl
    def register_retrievers(self, register):  # type: ignore[no-untyped-def]
        register(self.name, self.obj)


def test_a_duplicate_name_is_left_out_naming_both_plugins(capsys):
    # Issue 32: a name another plugin owns took every command down (exit 2); now the later
    # plugin is named once on stderr and left out, and the first keeps the name.
    with registered_plugin(_Plugin("same", OverlapRetriever), name="first-plugin"):
        with registered_plugin(_Plugin("same", OverlapRetriever), name="second-plugin"):
            assert registry.retrievers.get("same").plugin == "first-plugin"
            err = capsys.readouterr().err
    # Issue 37: one line naming both, saying which keeps it; only the clashing name is left out.
    assert err == ("recall-kit: retriever 'same' is registered by both 'first-plugin' and 'second-plugin'; "
                   "'first-plugin' (registered first) keeps it; the one 'second-plugin' registered is left out.\n")


def test_a_clash_leaves_out_only_the_clashing_name(capsys):
    class Both:
        @hookimpl
        def register_retrievers(self, register):  # type: ignore[no-untyped-def]
            register("same", OverlapRetriever)
            register("other", OverlapRetriever)

    with registered_plugin(_Plugin("same", OverlapRetriever), name="first-plugin"), \
            registered_plugin(Both(), name="second-plugin"):
        entries = registry.retrievers.all()
        assert entries["same"].plugin == "first-plugin" and entries["other"].plugin == "second-plugin"
        assert registry.plugins_listing()["errors"]["second-plugin (register_retrievers: same)"].startswith(
            "DuplicateNameError: retriever 'same' is registered by both")


@pytest.mark.parametrize(
    ("name", "obj", "message"),
    [
        ("bad", 42, "expected a class"),
        ("bad", dict, "expected a recall_kit.Retriever subclass"),
        ("a+b", OverlapRetriever, "bad name"),
    ],
)
def test_registration_is_type_checked(name, obj, message, capsys):
    with registered_plugin(_Plugin(name, obj), name="typo-plugin"), \
            registered_plugin(_Plugin("fine", OverlapRetriever), name="fine-plugin"):
        names = registry.retrievers.names()
        err = capsys.readouterr().err
    assert name not in names and "fine" in names  # left out; the others still work
    assert "plugin 'typo-plugin' failed in register_retrievers" in err and message in err


def test_metric_registration_checks_name(capsys):
    class MetricPlugin:
        @hookimpl
        def register_metrics(self, register):  # type: ignore[no-untyped-def]
            register("alias", Metric(name="other", compute=lambda data, cutoff: data.lengths))

    with registered_plugin(MetricPlugin(), name="metric-plugin"):
        assert "alias" not in registry.metrics.names()
    assert "registered under 'alias'" in capsys.readouterr().err


def test_hook_with_no_spec_fails_loudly():
    class Typo:
        @hookimpl
        def register_retriver(self, register):  # type: ignore[no-untyped-def]
            pass

    with registered_plugin(Typo(), name="typo"):
        with pytest.raises(pluggy.PluginValidationError):
            pm.check_pending()


def test_on_index_built_is_called_per_build(tiny_dataset, overlap_plugin):
    seen = []

    class Observer:
        @hookimpl
        def on_index_built(self, leg, retriever, corpus, stats):  # type: ignore[no-untyped-def]
            seen.append((leg, len(corpus), stats["memories"], stats["size_bytes"] > 0))

    from recall_kit import load_dataset, run_benchmark

    with registered_plugin(Observer(), name="observer"):
        run_benchmark("overlap", load_dataset(tiny_dataset), k=3)
    assert seen == [("overlap", 5, 5, True)]


def test_add_hookspecs_lets_a_plugin_declare_hooks():
    spec_module = type(sys)("extra_specs")
    exec(
        textwrap.dedent(
            """
            from recall_kit.hookspecs import hookspec
            @hookspec
            def register_widgets(register):
                "Register widgets."
            """
        ),
        spec_module.__dict__,
    )

    class Declarer:
        @hookimpl
        def add_hookspecs(self, plugin_manager):  # type: ignore[no-untyped-def]
            plugin_manager.add_hookspecs(spec_module)

    class Implementer:
        @hookimpl
        def register_widgets(self, register):  # type: ignore[no-untyped-def]
            register("w")

    with registered_plugin(Declarer(), name="declarer"):
        with registered_plugin(Implementer(), name="implementer"):
            found = []
            pm.hook.register_widgets(register=found.append)
            assert found == ["w"]
            pm.check_pending()


def _write_plugin_dist(site: Path, dist: str, module: str, body: str) -> None:
    """A real installed distribution (module + dist-info with an entry point) on a path."""
    (site / f"{module}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    info = site / f"{dist.replace('-', '_')}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[recall_kit]\n{module} = {module}\n", encoding="utf-8")


def _run_cli(args: list[str], site: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if k != "RECALL_KIT_LOAD_PLUGINS"}
    env["PYTHONPATH"] = str(site)
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)


GOOD_PLUGIN = """
    from recall_kit import hookimpl, Retriever, Hit
    class Good(Retriever):
        "A good retriever."
        def build_index(self, corpus): self.ids = corpus.ids
        def search(self, query, k): return [Hit(i, 1.0) for i in self.ids[:k]]
    @hookimpl
    def register_retrievers(register):
        register("goodone", Good)
"""


def test_entry_points_broken_plugin_allowlist_and_trace(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _write_plugin_dist(site, "rk-good", "rk_good", GOOD_PLUGIN)
    _write_plugin_dist(site, "rk-broken", "rk_broken", "raise ImportError('missing dependency zzz')\n")

    listed = _run_cli(["list", "retrievers"], site, {})
    assert listed.returncode == 0, listed.stderr
    assert "goodone" in listed.stdout and "rk-good" in listed.stdout
    assert "plugin 'rk-broken' failed to load (ImportError: missing dependency zzz)" in listed.stderr

    plugins = _run_cli(["plugins"], site, {})
    assert "rk-good" in plugins.stdout and "1.2.3" in plugins.stdout
    assert "failed to load: rk-broken" in plugins.stderr

    only_builtins = _run_cli(["list", "retrievers"], site, {"RECALL_KIT_LOAD_PLUGINS": ""})
    assert "goodone" not in only_builtins.stdout and only_builtins.stderr == ""

    allowed = _run_cli(["list", "retrievers"], site, {"RECALL_KIT_LOAD_PLUGINS": "rk-good"})
    assert "goodone" in allowed.stdout and "rk-broken" not in allowed.stderr

    traced = _run_cli(["list", "retrievers"], site, {"RECALL_KIT_LOAD_PLUGINS": "rk_good", "RECALL_KIT_TRACE_PLUGINS": "1"})
    assert "rk-good registered retriever 'goodone'" in traced.stderr


@pytest.mark.parametrize("argv", [["--help"], ["plugins"]])
def test_startup_does_not_import_heavy_libraries(argv):
    """`recall-kit --help` and `recall-kit plugins`, in a fresh process with every installed
    plugin loaded, import no torch, sentence-transformers, networkx, nor numpy: none of them is
    needed before a command computes something (docs/performance.md, start-up)."""
    code = (
        f"import sys; sys.argv=['recall-kit', *{argv!r}];\n"
        "from recall_kit.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy=[m for m in ('torch','sentence_transformers','networkx','numpy') if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    import os

    # Every installed plugin loads here: none may import a heavy library at registration.
    env = {k: v for k, v in os.environ.items() if k != "RECALL_KIT_LOAD_PLUGINS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr


def test_a_registry_sees_a_plugin_registered_again_at_the_same_address():
    # The registries were cached on the registered plugins' names and id()s: a new plugin object
    # reusing a freed one's address (CI saw it) was served the old registrations, without the
    # stderr line a malformed one earns. Re-registering one object with other contents is that case.
    class Swappable:
        name = "first_metric"

        @hookimpl
        def register_metrics(self, register):
            register(self.name, Metric(name=self.name, compute=lambda data, k: None))

    plugin = Swappable()
    with registered_plugin(plugin, name="swappable"):
        assert "first_metric" in registry.metrics.names()
    plugin.name = "second_metric"
    with registered_plugin(plugin, name="swappable"):
        names = registry.metrics.names()
        assert "second_metric" in names and "first_metric" not in names
    assert "second_metric" not in registry.metrics.names()
