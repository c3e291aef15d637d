"""Option values turned into Python values without importing pydantic for the common cases.

typer coerces every parameter's value through a pydantic ``TypeAdapter``; importing pydantic and
building the adapters costs about 0.1 s of every command's start (a third of `recall-kit score`'s
start-up). The values recall-kit's commands take are mostly plain: text, whole numbers, paths,
lists of those. `fast_coercion` gives such a parameter a coercion that yields exactly what the
adapter yields for them (the same str, int, `pathlib.Path`, list), and hands anything else (a
value it is not sure of, a bad number, an enum, a range, a path typer must check) to typer's own
coercion, built then: the results and the error messages stay typer's.

typer has no public way to coerce a parameter otherwise. This module imports nothing of typer and
names no private name of it; it reads two attributes a typer parameter carries: `type_descriptor`
(the annotation and the `typer.Option`/`typer.Argument` info) and `get_runtime_param()`, which
typer calls for the coercion of every value, replaced on the parameter. Where a typer lacks them,
its own coercion stays (slower, the same values). pyproject.toml pins the typer releases this was
written against; tests/cli/test_coercion.py says why and checks both the pin and the equality.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args, get_origin

#: A whole number that every reader turns into the same int (no sign, spaces, underscores or
#: leading zeros to interpret; at most 18 digits).
_PLAIN_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")

#: Where a value is not one `_leaf` is sure of.
_UNSURE = object()


class PlainCoercion:
    """typer's coercion for text, whole numbers, flags and paths (and lists of them) without pydantic;
    `typers` builds typer's own (`get_runtime_param`) for any value it is not sure of."""

    def __init__(self, annotation: Any, info: Any, typers: Callable[[], Any]) -> None:
        self.annotation = annotation
        self.info = info
        self.typers = typers

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        """A value as typer's `RuntimeParam.coerce` gives it: None as None (or () for a list)."""
        if value is None:
            return () if param.multiple or param.nargs == -1 else None
        if get_origin(self.annotation) is list and isinstance(value, (list, tuple)):
            (item_type,) = get_args(self.annotation)
            items = [self._leaf(item_type, item) for item in value]
            if all(item is not _UNSURE for item in items):
                return items
        elif get_origin(self.annotation) is None:
            result = self._leaf(self.annotation, value)
            if result is not _UNSURE:
                return result
        return self.typers().coerce(value, param=param, ctx=ctx)

    def _leaf(self, annotation: Any, value: Any) -> Any:
        if annotation is Path and isinstance(value, (str, Path)):
            # typer's path checks, where the parameter asks for none: an existing path must be readable
            path = value if isinstance(value, Path) else Path(value)
            if self.info.readable and os.path.exists(path) and not os.access(path, os.R_OK):
                return _UNSURE
            return path
        if type(value) is annotation:  # a default, or text for text: the adapter returns it as it is
            return value
        if annotation is int and type(value) is str and _PLAIN_INT.fullmatch(value):
            return int(value)
        return _UNSURE


def fast_coercion(param: Any) -> None:
    """Give a typer parameter of text, whole numbers, flags or paths (or a list of one of them)
    the coercion above; leave every other parameter, and any parameter typer made without the two
    attributes this reads, as typer made it."""
    descriptor = getattr(param, "type_descriptor", None)
    typers = getattr(param, "get_runtime_param", None)
    if descriptor is None or not callable(typers) or "get_runtime_param" in vars(param):
        return  # not typer's parameter as 0.29 makes it, or given the coercion already
    info = descriptor.parameter_info
    annotation = descriptor.annotation
    leaf = get_args(annotation)[0] if get_origin(annotation) is list and len(get_args(annotation)) == 1 else annotation
    plain = (
        getattr(descriptor, "file_annotation", None) is None
        and getattr(info, "parser", None) is None
        and getattr(info, "path_type", None) is None
        and leaf in (str, int, bool, Path)
        and not (leaf is int and (info.min is not None or info.max is not None or info.clamp))
        and not (leaf is Path and (info.exists or not info.file_okay or not info.dir_okay or info.writable
                                   or info.resolve_path))
    )
    if plain:
        coercion = PlainCoercion(annotation, info, typers)
        param.get_runtime_param = lambda: coercion
