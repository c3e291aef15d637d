"""Every model answer checked against the JSON schema its prompt asked for (the subset recall-kit's
prompts use): a grade of 100 under `"maximum": 3` is not a grade, whatever produced it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,), "number": (int, float),
    "boolean": (bool,), "null": (type(None),),
}


def _is_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False  # JSON's true is not 1
    if name == "number" and isinstance(value, float) and value != value:
        return False
    return isinstance(value, _TYPES.get(name, (object,)))


def schema_violation(value: Any, schema: Mapping[str, Any], where: str = "answer") -> str | None:
    """The first way `value` breaks `schema` (`answer.grade: 100 is above the maximum 3`), or None.

    Checks type, enum, const, minimum/maximum (and their exclusive forms), minLength/maxLength,
    properties, required, additionalProperties (false), items, minItems/maxItems."""
    kinds = schema.get("type")
    if kinds is not None:
        names = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_is_type(value, name) for name in names):
            return f"{where}: {type(value).__name__} where the schema wants {'/'.join(names)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: not one of the {len(schema['enum'])} allowed values"
    if "const" in schema and value != schema["const"]:
        return f"{where}: not the required constant"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for key, breaks in (("minimum", lambda v, b: v < b), ("maximum", lambda v, b: v > b),
                            ("exclusiveMinimum", lambda v, b: v <= b), ("exclusiveMaximum", lambda v, b: v >= b)):
            if key in schema and breaks(value, schema[key]):
                return f"{where}: {value} breaks its {key} {schema[key]}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return f"{where}: shorter than its minLength {schema['minLength']}"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{where}: longer than its maxLength {schema['maxLength']}"
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for name in schema.get("required") or ():
            if name not in value:
                return f"{where}: lacks the required {name!r}"
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(properties))
            if extra:
                return f"{where}: has {extra[0]!r}, which the schema does not allow"
        for name, sub in properties.items():
            if name in value:
                found = schema_violation(value[name], sub, f"{where}.{name}")
                if found:
                    return found
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return f"{where}: fewer items than its minItems {schema['minItems']}"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{where}: more items than its maxItems {schema['maxItems']}"
        if isinstance(schema.get("items"), Mapping):
            for index, item in enumerate(value):
                found = schema_violation(item, schema["items"], f"{where}[{index}]")
                if found:
                    return found
    return None
