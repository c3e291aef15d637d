"""Built-in importers: beir, locomo, longmemeval, trec and sqlite, registered like any plugin's."""

from __future__ import annotations

from recall_kit.hookspecs import Register, hookimpl


@hookimpl
def register_importers(register: Register) -> None:
    from recall_kit.curate.importers.beir import BeirImporter
    from recall_kit.curate.importers.locomo import LocomoImporter
    from recall_kit.curate.importers.longmemeval import LongMemEvalImporter
    from recall_kit.curate.importers.sqlite import SqliteImporter
    from recall_kit.curate.importers.trec import TrecImporter

    register("beir", BeirImporter)
    register("locomo", LocomoImporter)
    register("longmemeval", LongMemEvalImporter)
    register("trec", TrecImporter)
    register("sqlite", SqliteImporter)
