"""`recall-kit study init --retriever http|mcp|command`: a study whose baseline is the live system.

The running system (a remote retriever and its options) is the baseline, named `live`; the store is
a dataset folder, or a snapshot its importer (`http`, `mcp`) lists from the service into a folder
beside the study file, so that the corpus and the service agree by construction. Kept apart from
init.py, whose text it reuses and amends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recall_kit.errors import OptionError

#: The retrievers that speak to a running system (recall-kit-remote).
LIVE_RETRIEVERS = ("http", "mcp", "command")
#: The live baseline's name in the study.
LIVE_NAME = "live"


def _options_table(leg: str, options: dict[str, Any]) -> list[str]:
    from recall_kit.study.init import toml_value

    return [f"[systems.options.{leg}]", *(f"{key} = {toml_value(value)}" for key, value in options.items())]


def init_live_study(out: str | Path, retriever: str, options: list[str] | None = None, *,
                    dataset: str | Path | None = None, snapshot: str | None = None,
                    snapshot_from: str | Path | None = None, snapshot_options: dict[str, Any] | None = None,
                    hook_k: int = 5, force: bool = False) -> Path:
    """Write a study.toml at `out` whose baseline is the running system `retriever` (with `options`,
    `LEG.KEY=VALUE`), on `dataset` or on a snapshot the `snapshot` importer takes of the service
    (queries and qrels from `snapshot_from`). Returns the study file."""
    from recall_kit.fileio import write_text_atomic
    from recall_kit.measure.systems.system import parse_option_assignments
    from recall_kit.study.init import render_study

    if retriever not in LIVE_RETRIEVERS:
        raise OptionError(f"--retriever {retriever!r}: a running system is reached through "
                          f"{', '.join(LIVE_RETRIEVERS)} (recall-kit-remote).")
    if (dataset is None) == (snapshot is None):
        raise OptionError("With --retriever, name the memories: --dataset DIR, or --snapshot http|mcp with "
                          "--snapshot-from DIR (the queries and qrels) to list them from the service.")
    target = Path(out)
    if target.exists() and not force:
        raise OptionError(f"{target}: exists; choose another path or pass --force.")
    parsed = parse_option_assignments(options or [])
    folder = Path(dataset) if dataset is not None else _snapshot(target, snapshot, snapshot_from,
                                                                  snapshot_options or {}, force)
    text = render_study("dataset", folder, target, hook_k=hook_k, baseline=retriever, name=target.stem)
    block = f'[[systems]]\nname = "{retriever}"\nretriever = "{retriever}"\n'
    assert block in text
    lines = [f'[[systems]]\nname = "{LIVE_NAME}"                      # the running system, as it runs',
             f'retriever = "{retriever}"']
    for leg, values in parsed.items():
        lines += ["", *_options_table(leg, values)]
    text = text.replace(block, "\n".join(lines) + "\n", 1)
    text = text.replace(f'baseline = "{retriever}"', f'baseline = "{LIVE_NAME}"', 1)
    write_text_atomic(target, text)
    return target


def _snapshot(target: Path, importer: str | None, source: str | Path | None, options: dict[str, Any],
              force: bool) -> Path:
    """The service's memories listed by its snapshot importer into `<study file stem>-snapshot/`."""
    from recall_kit.curate.importers import import_dataset

    if importer not in ("http", "mcp"):
        raise OptionError(f"--snapshot {importer!r}: the snapshot importers are http and mcp.")
    if source is None:
        raise OptionError("--snapshot needs --snapshot-from DIR: the folder holding queries.jsonl and qrels.jsonl.")
    folder = target.parent / f"{target.stem}-snapshot"
    import_dataset(importer, source, folder, options, force=force)
    return folder
