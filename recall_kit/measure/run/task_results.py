"""A distributed run's task results (a leg's run, a scored system) as JSON and back: what a
checkpoint holds. JSON, never a pickle: a checkpoint folder may be shared (RECALL_KIT_CACHE), and
reading a pickle someone planted there would run their code (issue 37)."""

from __future__ import annotations

import math
from typing import Any

from recall_kit.measure.result import BenchmarkResult
from recall_kit.measure.run.runs import LegRun
from recall_kit.types import Hit

#: Bumped whenever the encoding changes: an older checkpoint is then run again.
FORMAT = 2


class NotATaskResult(ValueError):
    """A checkpoint's data that is not a task result this version wrote."""


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


def _pairs(value: dict[int, Any]) -> list[list[Any]]:
    return [[index, item] for index, item in value.items()]


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise NotATaskResult(f"expected a list, got {type(value).__name__}")
    return [_typed(item, str) for item in value]


def _optional(read: Any) -> Any:
    return lambda value: None if value is None else read(value)


# A LegRun field's annotation -> (to JSON, from JSON, checked). Driven by the dataclass's own fields,
# so a field added to LegRun is checkpointed, or its new type fails loudly at the first encode.
_CODECS: dict[str, tuple[Any, Any]] = {
    "str": (lambda v: v, lambda v: _typed(v, str)),
    "bool": (lambda v: v, lambda v: v if isinstance(v, bool) else _typed(v, bool)),
    "int": (lambda v: v, lambda v: _typed(v, int)),
    "float": (lambda v: v, _number),
    "int | None": (lambda v: v, _optional(lambda v: _typed(v, int))),
    "float | None": (lambda v: v, _optional(_number)),
    "str | None": (lambda v: v, _optional(lambda v: _typed(v, str))),
    "dict[str, Any]": (lambda v: v, lambda v: _typed(v, dict)),
    "dict[int, float]": (_pairs, lambda v: {_typed(i, int): _number(x) for i, x in v}),
    "dict[int, str]": (_pairs, lambda v: {_typed(i, int): _typed(x, str) for i, x in v}),
    "dict[int, list[str]]": (_pairs, lambda v: {_typed(i, int): _strings(x) for i, x in v}),
    "set[str]": (sorted, lambda v: set(_strings(v))),
    "list[list[Hit]]": (lambda v: [[[hit.id, hit.score] for hit in hits] for hits in v],
                        lambda v: [[Hit(_typed(doc, str), _number(score)) for doc, score in hits] for hits in v]),
}


def _leg_run_fields() -> list[tuple[str, str]]:
    import dataclasses

    return [(field.name, str(field.type)) for field in dataclasses.fields(LegRun)]


def encode(value: Any) -> dict[str, Any]:
    """`value` (a LegRun or a BenchmarkResult) as a JSON-ready dict; TypeError for anything else."""
    if isinstance(value, BenchmarkResult):
        return {"format": FORMAT, "type": "result", "data": value.to_dict()}
    if isinstance(value, LegRun):
        data = {}
        for name, annotation in _leg_run_fields():
            if annotation not in _CODECS:
                raise TypeError(f"LegRun.{name} ({annotation}) has no checkpoint encoding")
            data[name] = _CODECS[annotation][0](getattr(value, name))
        return {"format": FORMAT, "type": "leg_run", "data": data}
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
            return LegRun(**{name: _CODECS[annotation][1](data[name]) for name, annotation in _leg_run_fields()})
    except NotATaskResult:
        raise
    except Exception as error:  # a missing key, a row of the wrong shape, a bad result document
        raise NotATaskResult(f"a malformed {kind} ({type(error).__name__})") from None
    raise NotATaskResult(f"an unknown type {str(kind)[:40]!r}")
