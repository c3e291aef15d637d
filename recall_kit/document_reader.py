"""A JSON document read field by field: each failure one line naming the file and the field."""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from recall_kit.errors import ResultFileError

_T = TypeVar("_T")


def shown(value: Any) -> str:
    """A value as an error shows it: a long number by its length, never 5,000 digits."""
    text = repr(value)
    return text if len(text) <= 40 else f"a {type(value).__name__} of {len(text)} characters"


class DocumentReader:
    """Typed field access for a document's `from_dict`, each failure one line naming the file and
    the field: `<source>: <what>; not a valid <schema> document.`"""

    def __init__(self, source: str, schema: str) -> None:
        self.source = source
        self.schema = schema

    def error(self, what: str) -> ResultFileError:
        return ResultFileError(f"{self.source}: {what}; not a valid {self.schema} document.")

    def _get(self, data: dict[str, Any], key: str, where: str | None) -> Any:
        if key not in data:
            raise self.error(f"missing {where or key!r}")
        return data[key]

    def mapping(self, data: dict[str, Any], key: str, where: str | None = None) -> dict[str, Any]:
        value = self._get(data, key, where)
        if not isinstance(value, dict):
            raise self.error(f"{where or key} is not an object")
        return value

    def sequence(self, data: dict[str, Any], key: str, where: str | None = None) -> list[Any]:
        value = self._get(data, key, where)
        if not isinstance(value, list):
            raise self.error(f"{where or key} is not a list")
        return value

    def string(self, data: dict[str, Any], key: str, where: str | None = None) -> str:
        value = self._get(data, key, where)
        if not isinstance(value, str):
            raise self.error(f"{where or key} is not a string")
        return value

    def strings(self, data: dict[str, Any], key: str, where: str | None = None) -> list[str]:
        values = self.sequence(data, key, where)
        if not all(isinstance(value, str) for value in values):
            raise self.error(f"{where or key} holds a non-string")
        return values

    def number(self, data: dict[str, Any], key: str, where: str | None = None) -> float:
        return self.finite(self._get(data, key, where), where or key)

    def finite_list(self, values: list[Any], where: str) -> list[float]:
        """Each of `values` as a finite float (`finite`), `where[i]` naming the one that is not. The
        common case, JSON floats all finite, in one pass (a result file holds 100 scores a query)."""
        if all(type(value) is float for value in values) and all(map(math.isfinite, values)):
            return values
        return [self.finite(value, f"{where}[{position}]") for position, value in enumerate(values)]

    def finite(self, value: Any, where: str) -> float:
        """`value` as a finite float; a string, a bool, anything else or a non-finite number is refused."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(f"{where} is {shown(value)}, not a finite number")
        try:
            number = float(value)
        except OverflowError:  # an integer past the largest double
            number = math.inf
        if not math.isfinite(number):
            raise self.error(f"{where} is {shown(value)}, not a finite number")
        return number

    def object(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(f"{where} is not an object")
        return value

    def optional_mapping(self, data: dict[str, Any], key: str, where: str | None = None) -> dict[str, Any] | None:
        return None if data.get(key) is None else self.mapping(data, key, where)

    def optional_sequence(self, data: dict[str, Any], key: str, where: str | None = None) -> list[Any]:
        return [] if data.get(key) is None else self.sequence(data, key, where)

    def optional_string(self, data: dict[str, Any], key: str, where: str | None = None) -> str | None:
        return None if data.get(key) is None else self.string(data, key, where)

    def count(self, data: dict[str, Any], key: str, where: str | None = None) -> int:
        value = self.number(data, key, where)
        if value < 0 or not value.is_integer():
            raise self.error(f"{where or key} is {value!r}, not a count")
        return int(value)

    def optional_count(self, data: dict[str, Any], key: str, where: str | None = None) -> int | None:
        return None if data.get(key) is None else self.count(data, key, where)


# -- the decision documents, read back: what `compare`, `ablate` and `sweep` save ---------------------
# Their writers live in the decide layer (Comparison, Ablation, Sweep .to_dict); a reader of a saved

    def non_negative(self, value: float, where: str) -> float:
        """`value`, refused when it is below 0."""
        if value < 0:
            raise self.error(f"{where} is {value}, below 0")
        return value


def from_json(kind: type[_T], value: Mapping[str, object], source: str, schema: str) -> _T:
    """`value` (JSON) as the dataclass `kind`, field by field (lists, dicts and optionals inside). A key
    no field declares, or a required field missing, is one `ResultFileError` naming the file and the key:
    `<source>: unknown key <Kind>.<path>; not a valid <schema> document.`"""
    return typing.cast(_T, _read(kind, value, DocumentReader(source, schema), kind.__name__))


def _read(kind: object, value: object, reader: DocumentReader, where: str) -> object:
    """One value as `kind` (`where`: its path in the document, for the error)."""
    origin = typing.get_origin(kind)
    if value is None:
        return None
    if origin in (typing.Union, types.UnionType):
        return _read(next(arg for arg in typing.get_args(kind) if arg is not type(None)), value, reader, where)
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(kind)
        return [_read(item, entry, reader, f"{where}[{index}]") for index, entry in enumerate(value)]
    if origin is dict and isinstance(value, dict):
        _, item = typing.get_args(kind)
        return {key: _read(item, entry, reader, f"{where}.{key}") for key, entry in value.items()}
    if isinstance(kind, type) and dataclasses.is_dataclass(kind) and isinstance(value, Mapping):
        return _dataclass(kind, value, reader, where)
    return value


def _dataclass(kind: type, value: Mapping[str, object], reader: DocumentReader, where: str) -> object:
    hints = typing.get_type_hints(kind)
    fields = [f for f in dataclasses.fields(kind) if f.init]
    names = {f.name for f in fields}
    for key in value:
        if key not in names:
            raise reader.error(f"unknown key {where}.{key}")
    for f in fields:
        if f.name not in value and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise reader.error(f"missing {where}.{f.name}")
    return kind(**{key: _read(hints[key], entry, reader, f"{where}.{key}") for key, entry in value.items()})


def read_saved(path: str | Path, parse: Callable[[dict[str, Any]], _T]) -> _T:
    """A saved JSON document (a JSON object) read through `parse`; one line naming the file when it
    is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        return parse(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ResultFileError(f"{path}: not a readable saved document ({type(error).__name__}: {error}).") from None
