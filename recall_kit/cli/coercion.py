"""Option values turned into Python values without importing pydantic for the common cases.

typer coerces every parameter's value through a pydantic ``TypeAdapter``; importing pydantic and
building the adapters costs about 0.1 s of every command's start (a third of `recall-kit score`'s
start-up). The values recall-kit's commands take are mostly plain: text, whole numbers, paths,
lists of those. `fast_coercion` gives such a parameter a coercion that yields exactly what the
adapter yields for them (the same str, int, `pathlib.Path`, list), and hands anything else (a
value it is not sure of, a bad number, an enum, a range) to typer's own adapter, built then: the
results and the error messages stay typer's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

from typer._coercion import RuntimeParam, build_runtime_param
from typer._param_types import coerce_cli_path

#: A whole number that every reader turns into the same int (no sign, spaces, underscores or
#: leading zeros to interpret; at most 18 digits).
_PLAIN_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")

#: Where a value is not one `_leaf` is sure of.
_UNSURE = object()


@dataclass(frozen=True)
class _PlainRuntimeParam(RuntimeParam):
    """typer's coercion for text, whole numbers, flags and paths (and lists of them) without pydantic."""

    descriptor: Any

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        if get_origin(self.annotation) is list and isinstance(value, (list, tuple)):
            (item_type,) = get_args(self.annotation)
            items = [self._leaf(item_type, item, param, ctx) for item in value]
            if all(item is not _UNSURE for item in items):
                return items
        elif get_origin(self.annotation) is None:
            result = self._leaf(self.annotation, value, param, ctx)
            if result is not _UNSURE:
                return result
        return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    def _leaf(self, annotation: Any, value: Any, param: Any, ctx: Any) -> Any:
        if annotation is Path and isinstance(value, (str, Path)):
            # typer's own path checks, given the Path pydantic would make
            path = value if isinstance(value, Path) else Path(value)
            return coerce_cli_path(path, self.parameter_info, path_type=Path, param=param, ctx=ctx)
        if type(value) is annotation:  # a default, or text for text: the adapter returns it as it is
            return value
        if annotation is int and type(value) is str and _PLAIN_INT.fullmatch(value):
            return int(value)
        return _UNSURE


def fast_coercion(param: Any) -> None:
    """Give a typer parameter of text, whole numbers, flags or paths (or a list of one of them)
    the coercion above; leave every other parameter as typer made it."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or getattr(param, "_runtime_param", False) is not None:
        return
    info = descriptor.parameter_info
    annotation = descriptor.annotation
    leaf = get_args(annotation)[0] if get_origin(annotation) is list and len(get_args(annotation)) == 1 else annotation
    plain = (
        descriptor.file_annotation is None
        and getattr(info, "parser", None) is None
        and getattr(info, "path_type", None) is None
        and leaf in (str, int, bool, Path)
        and not (leaf is int and (info.min is not None or info.max is not None or info.clamp))
    )
    if plain:
        param._runtime_param = _PlainRuntimeParam(info, annotation, descriptor)
