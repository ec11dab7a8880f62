"""Checking a tool call's arguments against the tool's JSON schema (the small subset tools use)."""

from __future__ import annotations

import math
from typing import Any

# The largest integer a JSON number holds exactly; anything beyond is a mistake, not a line number.
MAX_SAFE_NUMBER = 2**53

_TYPE_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
               list: "an array", dict: "an object", type(None): "null"}
_SCHEMA_TYPE_NAMES = {"boolean": "a boolean", "integer": "an integer", "number": "a number", "string": "a string",
                      "array": "an array", "object": "an object"}


def _json_type(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _coerce(value: Any, expected: str) -> tuple[bool, Any]:
    """(value fits ``expected``, the value to use); 3.0 counts as the integer 3."""
    if expected == "integer":
        if isinstance(value, float) and value.is_integer():
            return True, int(value)
        return isinstance(value, int) and not isinstance(value, bool), value
    if expected == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool), value
    python_type = {"string": str, "boolean": bool, "array": list, "object": dict}.get(expected)
    return (python_type is None or isinstance(value, python_type)), value


def check_arguments(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """(the arguments to use, or a one-sentence problem for the model)."""
    properties: dict[str, Any] = schema.get("properties", {})
    required: list[str] = schema.get("required", [])
    # Models often send null for an optional argument they mean to leave out.
    given = {k: v for k, v in arguments.items() if not (v is None and k not in required)}
    allowed = ", ".join(properties) or "none"
    for name in given:
        if name not in properties:
            return given, f"{tool}: unexpected argument {name!r}; allowed arguments: {allowed}."
    for name in required:
        if name not in given:
            return given, f"{tool}: missing required argument {name!r}; allowed arguments: {allowed}."
    for name, value in list(given.items()):
        rules = properties[name]
        expected = rules.get("type")
        if expected:
            fits, value = _coerce(value, expected)
            if not fits:
                wanted = _SCHEMA_TYPE_NAMES.get(expected, expected)
                return given, f"{tool}: argument {name!r} must be {wanted}, not {_json_type(value)}."
            given[name] = value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            # json.loads accepts NaN and Infinity, and NaN passes every comparison with a bound.
            if not math.isfinite(value):
                return given, f"{tool}: argument {name!r} must be a finite number, not {value}."
            if abs(value) > MAX_SAFE_NUMBER:
                return given, f"{tool}: argument {name!r} is out of range ({value:.3g}); give a number below 2**53."
        if "minimum" in rules and isinstance(value, (int, float)) and value < rules["minimum"]:
            return given, f"{tool}: argument {name!r} must be at least {rules['minimum']}, not {value}."
        if "maximum" in rules and isinstance(value, (int, float)) and value > rules["maximum"]:
            return given, f"{tool}: argument {name!r} must be at most {rules['maximum']}, not {value}."
    return given, None
