"""The built-in query generator (`exact`), registered through the same hook as any plugin's."""

from __future__ import annotations

from recall_kit.hookspecs import Register, hookimpl


@hookimpl
def register_query_generators(register: Register) -> None:
    from recall_kit.curate.generate import ExactPhraseGenerator

    register("exact", ExactPhraseGenerator)
