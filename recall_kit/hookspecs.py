"""The hook markers, the hook specifications of recall-kit and `Register`, the type of their callbacks."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import typer

    from recall_kit.types import Corpus, Retriever

hookspec = pluggy.HookspecMarker("recall_kit")
hookimpl = pluggy.HookimplMarker("recall_kit")

# `register(name, obj)` callbacks. The host owns the registry; it checks each object's type at
# registration and fails loudly, naming both plugins, when two plugins register one name.
Register = Callable[[str, Any], None]


@hookspec
def register_retrievers(register: Register) -> None:
    """Register retriever classes by name.

    :param register: call ``register(name, cls)`` once per retriever. ``cls`` is a subclass of
        :class:`recall_kit.Retriever`, or any class whose instances have ``search(query, k)``
        returning hits or ``retrieve(query, k)`` returning ids (the runner adapts those). Its
        nested ``Options`` dataclass, if any, declares the ``-o name.key=value`` options.
    :returns: nothing; every implementation is called.
    """


@hookspec
def register_fusions(register: Register) -> None:
    """Register fusion strategies by name.

    :param register: call ``register(name, cls)`` with a subclass of :class:`recall_kit.Fusion`.
    :returns: nothing; every implementation is called.
    """


@hookspec
def register_metrics(register: Register) -> None:
    """Register metric families by name (``recall`` serves ``recall@5`` and ``recall@10``).

    :param register: call ``register(name, metric)`` with a :class:`recall_kit.Metric`.
    :returns: nothing; every implementation is called.
    """


@hookspec
def register_reporters(register: Register) -> None:
    """Register output formats for ``--report NAME``.

    :param register: call ``register(name, cls)`` with a subclass of :class:`recall_kit.Reporter`.
    :returns: nothing; every implementation is called.
    """


@hookspec
def register_importers(register: Register) -> None:
    """Register dataset importers for ``recall-kit dataset import FORMAT``.

    :param register: call ``register(name, cls)`` with a subclass of :class:`recall_kit.Importer`.
    :returns: nothing; every implementation is called.
    """


@hookspec
def register_query_generators(register: Register) -> None:
    """Register query generators for ``recall-kit dataset generate`` (``--generator NAME:COUNT``).

    :param register: call ``register(name, cls)`` with a subclass of
        :class:`recall_kit.QueryGenerator`; its ``stratum`` names the stratum
        its queries belong to (``--paraphrase N`` uses the one generator of stratum
        ``paraphrase``), and ``generate(corpus, count, seed)`` returns ``GeneratedQuery`` objects
        with their relevant ids. The built-in ``exact`` generator is registered this way too.
    :returns: nothing; every implementation is called.
    """


@hookspec
def register_judges(register: Register) -> None:
    """Register relevance judges for ``recall-kit judge POOL --judge NAME`` (``--model NAME`` for
    a model judge).

    :param register: call ``register(name, cls)`` with a subclass of
        :class:`recall_kit.RelevanceJudge`; ``grade(query, memory)`` returns a grade 0-3 (or
        None when no usable answer came). A judge with ``learns = True`` is fitted first
        (``fit(context)``, a :class:`recall_kit.plugin.JudgingContext` of labelled pairs).
    :returns: nothing; every implementation is called.
    """


@hookspec
def register_commands(app: typer.Typer) -> None:
    """Add sub-commands to the ``recall-kit`` command line.

    :param app: the root typer application; decorate functions with ``@app.command()``.
    :returns: nothing; every implementation is called.
    """


@hookspec
def on_index_built(leg: str, retriever: Retriever, corpus: Corpus, stats: dict[str, Any]) -> None:
    """Called by the runner after each index build, to observe or persist indexes.

    :param leg: the leg's name in the system (``fts5``, ``dense``, ...).
    :param retriever: the retriever whose index was just built.
    :param corpus: the corpus (or the scope's part of it) that was indexed.
    :param stats: aggregate numbers of the build (``build_seconds``, ``size_bytes``, ``memories``,
        ``scope``); an implementation may read it but must not rely on changing it.
    :returns: nothing; every implementation is called.
    """


@hookspec(historic=True)
def add_hookspecs(plugin_manager: pluggy.PluginManager) -> None:
    """Let a plugin add hook specifications of its own (as pytest's ``pytest_addhooks``).

    Historic: a plugin registered later is still called. Use it to declare hooks that other
    plugins implement, e.g. ``recall-kit-graph``'s ``register_extractors``.

    :param plugin_manager: the one plugin manager; call ``plugin_manager.add_hookspecs(module)``.
    :returns: nothing; every implementation is called.
    """
