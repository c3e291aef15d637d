"""A distributed run's task results (a leg's run, a scored system) as JSON and back: what a
checkpoint holds. JSON, never a pickle: a checkpoint folder may be shared (RECALL_KIT_CACHE), and
reading a pickle someone planted there would run their code (issue 37)."""

from __future__ import annotations

import math
from typing import Any

from recall_kit.measure.result import BenchmarkResult
from recall_kit.measure.runner import LegRun
from recall_kit.types import Hit

#: Bumped whenever the encoding changes: an older checkpoint is then run again.
FORMAT = 1


class NotATaskResult(ValueError):
    """A checkpoint's data that is not a task result this version wrote."""


def encode(value: Any) -> dict[str, Any]:
    """`value` (a LegRun or a BenchmarkResult) as a JSON-ready dict; TypeError for anything else."""
    if isinstance(value, BenchmarkResult):
        return {"format": FORMAT, "type": "result", "data": value.to_dict()}
    if isinstance(value, LegRun):
        return {"format": FORMAT, "type": "leg_run", "data": {
            "name": value.name,
            "hits": [[[hit.id, hit.score] for hit in hits] for hits in value.hits],
            "build_seconds": value.build_seconds, "size_bytes": value.size_bytes,
            "index_stats": value.index_stats, "batch_seconds": value.batch_seconds,
            "single_query_ms": [[index, ms] for index, ms in value.latency_ms.items()],
            "wait_ms": [[index, ms] for index, ms in value.wait_ms.items()],
            "first_query_ms": value.first_query_ms,
            "failures": [[index, reason] for index, reason in value.failures.items()],
            "indexes": value.indexes,
        }}
    raise TypeError(f"a task result of type {type(value).__name__} has no checkpoint format")


def decode(document: Any) -> Any:
    """The task result `encode` wrote; NotATaskResult for anything else (another version's, a
    file planted or damaged), never an object of another type."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise NotATaskResult("not a checkpoint of this version")
    kind, data = document.get("type"), document.get("data")
    try:
        if kind == "result":
            return BenchmarkResult.from_dict(data, source="checkpoint")
        if kind == "leg_run" and isinstance(data, dict):
            return LegRun(
                name=_typed(data["name"], str),
                hits=[[Hit(_typed(doc, str), _number(score)) for doc, score in hits] for hits in data["hits"]],
                build_seconds=_number(data["build_seconds"]),
                size_bytes=None if data["size_bytes"] is None else _typed(data["size_bytes"], int),
                index_stats=_typed(data["index_stats"], dict),
                batch_seconds=_number(data["batch_seconds"]),
                latency_ms={_typed(index, int): _number(ms) for index, ms in data["single_query_ms"]},
                wait_ms={_typed(index, int): _number(ms) for index, ms in data["wait_ms"]},
                first_query_ms=None if data["first_query_ms"] is None else _number(data["first_query_ms"]),
                failures={_typed(index, int): _typed(reason, str) for index, reason in data["failures"]},
                indexes=_typed(data["indexes"], int),
            )
    except NotATaskResult:
        raise
    except Exception as error:  # a missing key, a row of the wrong shape, a bad result document
        raise NotATaskResult(f"a malformed {kind} ({type(error).__name__})") from None
    raise NotATaskResult(f"an unknown type {str(kind)[:40]!r}")


def _typed(value: Any, kind: type) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise NotATaskResult(f"expected {kind.__name__}, got {type(value).__name__}")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NotATaskResult(f"expected a number, got {type(value).__name__}")
    if isinstance(value, int) and not math.isfinite(float(value)):
        raise NotATaskResult("a number out of range")
    return float(value)
