"""The on-disk cache of corpus embeddings: one .npy per key, a JSON sidecar, atomic writes, checks."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from recall_kit.plugin import atomic_open, user_cache_folder

#: Bumped when the layout or the meaning of a cached array changes.
CACHE_FORMAT = 1


def cache_folder() -> Path:
    """`$RECALL_KIT_CACHE/dense`, else the platform's user cache folder + `recall-kit/dense`."""
    return user_cache_folder("dense")


def key_digest(key: Mapping[str, Any]) -> str:
    """The file name stem of a key: sha256 of its canonical JSON."""
    text = json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def array_checksum(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


@dataclass
class CacheLookup:
    """What a lookup found: the array on a hit, and a status for the stats."""

    #: "hit", "miss" (no file), "corrupt" (unreadable or checksum differs), "mismatch" (the
    #: sidecar's key, shape or dtype is not the one asked for), or "disabled".
    status: str
    array: np.ndarray | None = None
    extra: dict[str, Any] | None = None

    @property
    def hit(self) -> bool:
        return self.status == "hit"


class EmbeddingCache:
    """Arrays keyed by everything that determines them; a bad file is reported, never used."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else cache_folder()

    def paths(self, key: Mapping[str, Any]) -> tuple[Path, Path]:
        stem = key_digest(key)
        return self.folder / f"{stem}.npy", self.folder / f"{stem}.json"

    def load(self, key: Mapping[str, Any]) -> CacheLookup:
        """The cached array for `key`, checked against its sidecar (key, shape, dtype, checksum)."""
        array_path, sidecar_path = self.paths(key)
        if not array_path.exists() and not sidecar_path.exists():
            return CacheLookup("miss")
        try:
            sidecar = json.loads(sidecar_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return CacheLookup("corrupt")
        if not isinstance(sidecar, dict) or sidecar.get("format") != CACHE_FORMAT:
            return CacheLookup("mismatch")
        if sidecar.get("key") != json.loads(json.dumps(dict(key))):
            return CacheLookup("mismatch")
        try:
            array = np.load(array_path, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return CacheLookup("corrupt")
        if (
            list(array.shape) != list(sidecar.get("shape", []))
            or str(array.dtype) != sidecar.get("dtype")
            or array_checksum(array) != sidecar.get("sha256")
        ):
            return CacheLookup("corrupt")
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            return CacheLookup("corrupt")  # NaN vectors with a matching checksum: written broken
        if array.ndim == 2 and array.shape[0] and not np.abs(array).sum(axis=1).all():
            return CacheLookup("corrupt")  # an all-zero row is no embedding: every score 0, silently
        return CacheLookup("hit", array, dict(sidecar.get("extra") or {}))

    def store(self, key: Mapping[str, Any], array: np.ndarray, extra: Mapping[str, Any]) -> Path:
        """Write the array, then its sidecar, each to a temporary file moved into place."""
        array_path, sidecar_path = self.paths(key)
        array = np.ascontiguousarray(array)  # (atomic_open makes the folder, and removes it on failure)
        sidecar = {
            "format": CACHE_FORMAT,
            "key": dict(key),
            "shape": list(array.shape),
            "dtype": str(array.dtype),
            "sha256": array_checksum(array),
            "extra": dict(extra),
        }
        from recall_kit.plugin import atomic_batch

        with atomic_batch():  # both files or neither: a full disk must not leave an array without its sidecar
            with atomic_open(array_path, "wb", private=True) as handle:
                np.save(handle, array, allow_pickle=False)
            with atomic_open(sidecar_path, "wb", private=True) as handle:
                handle.write(json.dumps(sidecar, indent=1, sort_keys=True).encode())
        return array_path
