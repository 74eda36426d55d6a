"""Reading request and response shapes: plain dicts and SDK (pydantic) objects alike.

How a field is read is decided once per (type, name): ``isinstance`` against the ``Mapping`` ABC goes
through ``ABCMeta.__instancecheck__`` on every call, and ``getattr`` of a name a pydantic model does not
declare raises inside pydantic (about 1.7 us) before the default is returned. The wrappers read
fields of every block of every request and response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeGuard

__all__ = ["field", "is_mapping"]

_MAPPING: dict[type, bool] = {dict: True}
_BY_KEY: Final = 0
_BY_ATTRIBUTE: Final = 1
_PYDANTIC_EXTRA: Final = 2
_READERS: dict[tuple[type, str], int] = {}


def is_mapping(value: object) -> TypeGuard[Mapping[Any, Any]]:
    """``isinstance(value, Mapping)``, decided once per type (the ABC's check runs on every call)."""
    kind = type(value)
    found = _MAPPING.get(kind)
    if found is None:
        found = _MAPPING[kind] = isinstance(value, Mapping)
    return found


def _reader(value: object, name: str) -> int:
    if is_mapping(value):
        return _BY_KEY
    kind = type(value)
    fields = getattr(kind, "model_fields", None)
    if isinstance(fields, dict) and name not in fields and not hasattr(kind, name):
        return _PYDANTIC_EXTRA  # not declared here: only an extra field can carry it
    return _BY_ATTRIBUTE


def field(value: object, name: str) -> Any:
    """``value[name]`` of a mapping, else the attribute (an undeclared pydantic field: the extra one);
    ``None`` when absent."""
    key = (type(value), name)
    how = _READERS.get(key)
    if how is None:
        how = _READERS[key] = _reader(value, name)
    if how == _BY_KEY:
        return value.get(name)  # type: ignore[attr-defined]
    if how == _BY_ATTRIBUTE:
        return getattr(value, name, None)
    extra = getattr(value, "__pydantic_extra__", None)
    return extra.get(name) if extra else None
