"""Turning `-o name.key=value` strings and TOML values into a plugin's typed `Options` dataclass."""

from __future__ import annotations

import dataclasses
import types
import typing
import warnings
from collections.abc import Mapping
from typing import Any, Literal

from recall_kit.errors import OptionError, RecallKitWarning
from recall_kit.masking import mask_values

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def build_options(owner: str, options_class: type, raw: Mapping[str, Any]) -> Any:
    """Instantiate `options_class` from `raw`, coercing strings to the declared field types.

    `owner` names the plugin in error messages (`retriever 'fts5'`). An option's old spelling, listed
    in the class's ``renamed_options`` (``{"old": "new"}``), is still accepted, with a warning.
    """
    if not dataclasses.is_dataclass(options_class):
        if raw:
            raise OptionError(f"{owner} takes no options (got {', '.join(sorted(raw))}).")
        return None
    fields = {field.name: field for field in dataclasses.fields(options_class) if field.init}
    hints = typing.get_type_hints(options_class)
    values: dict[str, Any] = {}
    renamed: Mapping[str, str] = getattr(options_class, "renamed_options", {})
    for key, value in raw.items():
        if key in renamed and key not in fields:
            new = renamed[key]
            if new in raw:
                raise OptionError(f"{owner} options {key!r} and {new!r} are one option: give only {new!r}.")
            warnings.warn(f"{owner} option {key!r} is now called {new!r}; the old name will be removed.",
                          RecallKitWarning, stacklevel=2)
            key = new
        if key not in fields:
            available = ", ".join(sorted(fields)) or "none"
            raise OptionError(f"Unknown option {key!r} for {owner}. Available: {available}.")
        values[key] = coerce(value, hints.get(key, Any), f"{owner} option {key!r}")
    try:
        return options_class(**values)
    except (TypeError, ValueError) as error:
        raise OptionError(f"Bad options for {owner}: {error}") from None


def coerce(value: Any, annotation: Any, what: str) -> Any:
    """Coerce `value` (often a string from the command line) to `annotation`."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            if type(None) in args:
                return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(value, arg, what)
            except OptionError as error:
                errors.append(str(error))
        raise OptionError(errors[0] if errors else f"Bad value {value!r} for {what}.")
    if origin is Literal:
        for choice in args:
            if value == choice or (isinstance(value, str) and str(choice) == value):
                return choice
        choices = ", ".join(str(choice) for choice in args)
        raise OptionError(f"Bad value {value!r} for {what}: expected one of {choices}.")
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise OptionError(f"Bad value {value!r} for {what}: expected true or false.")
    if annotation in (int, float):
        if isinstance(value, bool):
            raise OptionError(f"Bad value {value!r} for {what}: expected a number.")
        try:
            number = annotation(value)
        except (TypeError, ValueError):
            kind = "an integer" if annotation is int else "a number"
            raise OptionError(f"Bad value {value!r} for {what}: expected {kind}.") from None
        if annotation is float and number != number:
            raise OptionError(f"Bad value {value!r} for {what}: NaN is not a number here.")
        if annotation is int and isinstance(value, float) and value != number:
            raise OptionError(f"Bad value {value!r} for {what}: expected an integer.")
        return number
    if annotation is str:
        if isinstance(value, (dict, list)):
            raise OptionError(f"Bad value {value!r} for {what}: expected text.")
        return str(value)
    if origin in (list, tuple) and args:
        items = value.split(",") if isinstance(value, str) else list(value)
        item_type = args[0]
        coerced = [coerce(item.strip() if isinstance(item, str) else item, item_type, what)
                   for item in items if not (isinstance(item, str) and not item.strip())]
        return tuple(coerced) if origin is tuple else coerced
    if origin is dict and len(args) == 2:
        return _coerce_mapping(value, args[0], args[1], what)
    return value


def _coerce_mapping(value: Any, key_type: Any, value_type: Any, what: str) -> dict[Any, Any]:
    """A mapping from a dict (TOML) or from `a:1,b:2` text (the command line)."""
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, str):
        pairs = []
        for part in filter(None, (part.strip() for part in value.split(","))):
            key, sep, item = part.partition(":")
            if not sep:
                raise OptionError(f"Bad value {value!r} for {what}: expected key:value,key:value.")
            pairs.append((key.strip(), item.strip()))
    else:
        raise OptionError(f"Bad value {value!r} for {what}: expected key:value,key:value.")
    return {coerce(key, key_type, what): coerce(item, value_type, what) for key, item in pairs}


def options_to_dict(options: Any, masked: bool = True) -> dict[str, Any]:
    """The options as plain JSON-able values, for the result's `system` section: every secret in
    them masked (`mask_secrets`; `masked=False` only for a key that is never written)."""
    if options is None or not dataclasses.is_dataclass(options) or isinstance(options, type):
        return {}
    values = dataclasses.asdict(options)
    for field in dataclasses.fields(options) if masked else ():
        # A field may name a function that masks its value (a DSN's password) wherever options are written.
        redact = field.metadata.get("redact")
        if redact is not None and values.get(field.name) is not None:
            values[field.name] = redact(values[field.name])
    return {key: _plain(mask_values(value) if masked else value) for key, value in values.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def describe_options(options_class: type | None) -> list[tuple[str, str, Any, str]]:
    """Each field of an Options dataclass as `(name, type, default, meaning)`, the meaning read from
    the `#:` comment lines above the field (as Sphinx's autodoc reads them); "" where there is none.
    What `recall-kit dataset import FORMAT --help` shows."""
    import inspect
    import re

    if options_class is None or not dataclasses.is_dataclass(options_class):
        return []
    sources = []
    for klass in reversed(options_class.__mro__):  # a field inherited from a base keeps its comment
        if dataclasses.is_dataclass(klass):
            try:
                sources.append(inspect.getsource(klass))
            except (OSError, TypeError):
                continue
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in "\n".join(sources).splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = re.match(r"(\w+)\s*:", stripped)
        if match and pending:
            comments[match.group(1)] = " ".join(pending)
        pending = []
    hints = typing.get_type_hints(options_class)
    rows = []
    for field in dataclasses.fields(options_class):
        if not field.init:
            continue
        annotation = hints.get(field.name, Any)
        if typing.get_origin(annotation) is Literal:
            type_text = "|".join(str(choice) for choice in typing.get_args(annotation))
        else:
            type_text = getattr(annotation, "__name__", str(annotation).replace("typing.", ""))
        default = field.default if field.default is not dataclasses.MISSING else None
        rows.append((field.name, type_text, default, comments.get(field.name, "")))
    return rows
