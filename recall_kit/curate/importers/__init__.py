"""Dataset importers (BEIR, LoCoMo, LongMemEval, TREC, SQLite) and the atomic import they run in.

Each importer is a `recall_kit.Importer` registered through `register_importers` (the built-in
ones in `recall_kit.default_plugins.importers`); `import_dataset` looks one up by name, builds its
typed options, runs it into a temporary folder, validates the result, and only then moves it into
place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recall_kit.errors import DatasetError, OptionError


def parse_importer_args(args: Sequence[str], options_class: type | None = None) -> dict[str, str]:
    """`--key value`, `--key=value`, `--flag` and `--no-flag` pairs as `{key: value}` strings.

    Dashes in keys become underscores (`--id-col id` -> `id_col`). A bare `--flag` is "true";
    `--no-flag` is "false" when `flag` is a declared option and `no_flag` is not.
    """
    import dataclasses

    declared = (
        {field.name for field in dataclasses.fields(options_class)}
        if options_class is not None and dataclasses.is_dataclass(options_class)
        else set()
    )
    raw: dict[str, str] = {}
    index = 0
    items = list(args)
    while index < len(items):
        token = items[index]
        if not token.startswith("--") or token == "--":
            raise OptionError(f"Unexpected argument {token!r}: importer options are --key value pairs.")
        name, sep, value = token[2:].partition("=")
        key = name.replace("-", "_")
        if not key:
            raise OptionError(f"Unexpected argument {token!r}: importer options are --key value pairs.")
        if not sep:
            following = items[index + 1] if index + 1 < len(items) else None
            if following is not None and not following.startswith("--"):
                value = following
                index += 1
            elif key.startswith("no_") and key not in declared and key[3:] in declared:
                key, value = key[3:], "false"
            else:
                value = "true"
        if key in raw:
            raise OptionError(f"Option --{name} is given twice.")
        raw[key] = value
        index += 1
    return raw


def import_dataset(
    format_name: str,
    source: str | Path,
    destination: str | Path,
    raw_options: Mapping[str, Any] | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Run the importer `format_name` on `source` into the folder `destination`, atomically.

    `raw_options` are the importer's options as strings or values (coerced to its `Options`
    types; unknown keys are an `OptionError`). `destination` must be absent or empty unless
    `force`. The folder is written beside `destination`, checked with `read_dataset`, and renamed
    into place only when it validates. Returns the importer's counts.
    """
    import recall_kit.registry as registry
    from recall_kit.curate.importers._writer import atomic_folder, check_source
    from recall_kit.dataset import read_dataset

    importer = registry.importers.create(format_name, raw_options)
    source_path = Path(source)
    if not source_path.exists():
        raise DatasetError(f"{source_path}: not found")
    check_source(source_path)
    with atomic_folder(destination, force=force, inputs=[source_path]) as folder:
        counts = registry.importers.get(format_name).call("run", importer.run, source_path, folder)
        _, problems = read_dataset(folder)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            dropped = counts.get("dropped") if isinstance(counts, Mapping) else None
            why = ("; it dropped " + ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in dropped.items())
                   if dropped else "; it dropped nothing")
            raise DatasetError(
                f"importer {format_name!r} wrote a dataset that does not validate: {problems[0]}{more}{why}"
            )
    return counts


def flatten_counts(counts: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested counts as `(dotted.key, value)` pairs, for printing."""
    pairs: list[tuple[str, Any]] = []
    for key, value in counts.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            if value:
                pairs.extend(flatten_counts(value, name + "."))
            else:
                pairs.append((name, 0))
        else:
            pairs.append((name, value))
    return pairs
