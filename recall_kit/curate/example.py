"""`recall-kit dataset example OUT`: copy a dataset shipped inside the package to a folder."""

from __future__ import annotations

import shutil
from pathlib import Path

from recall_kit.curate.importers._writer import atomic_folder
from recall_kit.dataset import EXAMPLE_PREFIX, dataset_folder
from recall_kit.fileio import user_mode


def write_example_dataset(destination: str | Path, name: str = "memories", force: bool = False) -> Path:
    """Copy the shipped example `name` (see `example_datasets()`) to `destination`, a folder that
    is absent or empty (or replaced whole with `force`); return the folder it was copied from."""
    source = dataset_folder(EXAMPLE_PREFIX + name.removeprefix(EXAMPLE_PREFIX))
    with atomic_folder(destination, force=force) as folder:
        for path in sorted(source.iterdir()):
            if path.is_file():
                shutil.copyfile(path, folder / path.name)
                (folder / path.name).chmod(user_mode())
    return source
