"""A dataset's two halves, as `sweep --holdout` splits them, written as two dataset folders.

`sweep --holdout 0.5` chooses a setting on one half of the queries and reports it on the other;
`dataset split` writes those very halves (the same seeded, stratified split:
`recall_kit.dataset.split_queries`), so that the chosen system, and any other, can be run and
compared on the held-out half alone with `eval` and `compare`: per stratum, with intervals.

Each half is the source folder with its queries and qrels filtered: corpus.jsonl and
sensitive_ids.txt are copied byte for byte, and every kept query or qrels line is the source's
line unchanged. `split.json` beside the halves records the source's fingerprint, the share and
the seed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from recall_kit.dataset import (
    CORPUS_FILE,
    QRELS_FILE,
    QUERIES_FILE,
    SENSITIVE_IDS_FILE,
    as_id,
    load_dataset,
    split_queries,
)
from recall_kit.fileio import atomic_open, write_json_atomic

TUNING = "tuning"
HELD_OUT = "held-out"
MANIFEST = "split.json"


def _filter_lines(source: Path, target: Path, keep: set[str]) -> None:
    """Copy the lines of a JSONL file whose query_id is in `keep` (the source validated them)."""
    with source.open(encoding="utf-8") as lines, atomic_open(target) as out:
        for line in lines:
            if line.strip() and as_id(json.loads(line).get("query_id")) in keep:
                out.write(line if line.endswith("\n") else line + "\n")


def _write_half(root: Path, folder: Path, keep: set[str]) -> None:
    folder.mkdir()
    for name in (CORPUS_FILE, SENSITIVE_IDS_FILE):
        if (root / name).is_file():
            shutil.copyfile(root / name, folder / name)
    for name in (QUERIES_FILE, QRELS_FILE):
        if (root / name).is_file():
            _filter_lines(root / name, folder / name, keep)


def split_dataset(source: str | Path, destination: str | Path, holdout: float, seed: int = 0,
                  force: bool = False) -> dict[str, Any]:
    """Write `destination/tuning` and `destination/held-out` (and `split.json`), atomically: the
    split `sweep --holdout HOLDOUT --seed SEED` makes of `source`. Returns what split.json holds."""
    from recall_kit.curate.importers._writer import atomic_folder

    dataset = load_dataset(source)
    tuning, held_out = split_queries(dataset, holdout, seed)
    halves = {TUNING: set(tuning), HELD_OUT: set(held_out)}
    strata: dict[str, dict[str, int]] = {}
    for query in dataset.queries:
        side = HELD_OUT if query.query_id in halves[HELD_OUT] else TUNING
        counts = strata.setdefault(query.stratum, {TUNING: 0, HELD_OUT: 0})
        counts[side] += 1
    manifest = {
        "source_fingerprint": dataset.fingerprint,
        "holdout": holdout,
        "seed": seed,
        "queries": {side: len(ids) for side, ids in halves.items()},
        "strata": dict(sorted(strata.items())),
        "same_as": f"recall-kit sweep --holdout {holdout} --seed {seed}",
    }
    with atomic_folder(destination, force=force, inputs=[dataset.path]) as folder:
        for side, keep in halves.items():
            _write_half(dataset.path, folder / side, keep)
        write_json_atomic(folder / MANIFEST, manifest)
    return manifest


__all__ = ["HELD_OUT", "MANIFEST", "TUNING", "split_dataset"]
