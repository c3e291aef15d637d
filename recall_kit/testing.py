"""Helpers for testing recall-kit plugins (a pytest plugin: fixtures and a conformance suite)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from recall_kit.plugins import load_plugins, pm


@contextmanager
def registered_plugin(plugin: Any, name: str | None = None) -> Iterator[Any]:
    """Register `plugin` (a module or an object with hook implementations) for the block's duration."""
    load_plugins()
    registered_name = pm.register(plugin, name=name)
    try:
        yield plugin
    finally:
        pm.unregister(name=registered_name)
