"""Names a package exports but imports on first use (PEP 562), so that importing it stays cheap.

The host imports every plugin package for every command, `recall-kit --help` included; a package
that imports numpy or a model library at the top makes every command pay for it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for `package`: ``names`` maps an exported name to the module
    that defines it (``"pkg.module"``), or to ``"pkg.module:attribute"`` when the name differs there.

    Use: ``__getattr__ = lazy_attributes(__name__, {"MyRetriever": "my_plugin.retriever"})``.
    """

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = names[name].partition(":")
        return getattr(importlib.import_module(module), attribute or name)

    return __getattr__


__all__ = ["lazy_attributes"]
