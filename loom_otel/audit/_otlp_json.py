"""Journal records out of OTLP JSON (the collector ``file`` exporter's output, one request per line:
spans, whose events carry records, and log records, each carrying one).

OTLP JSON encodes 64-bit integers as strings (``{"intValue": "12"}``), arrays as
``{"arrayValue": {"values": [...]}}`` and may use either lowerCamelCase or the proto field names;
attribute values are normalized back to the JSON the journal wrote, so a record's hash recomputes
exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from loom_otel.core.journal import record_from_event

__all__ = ["raw_events", "records_in_request"]


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("boolean where an integer belongs")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ValueError("not an integer")


def _float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("boolean where a number belongs")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return float(value)  # proto JSON spells non-finite doubles "NaN", "Infinity"
    raise ValueError("not a number")


def any_value(value: Any) -> Any:
    """The plain JSON value of an OTLP ``AnyValue``."""
    if not isinstance(value, dict):
        raise ValueError("not an AnyValue")
    for camel, snake in (("stringValue", "string_value"), ("boolValue", "bool_value")):
        found = _get(value, camel, snake)
        if found is not None:
            if not isinstance(found, (str, bool)):
                raise ValueError("mistyped value")
            return found
    found = _get(value, "intValue", "int_value")
    if found is not None:
        return _int(found)
    found = _get(value, "doubleValue", "double_value")
    if found is not None:
        return _float(found)
    found = _get(value, "arrayValue", "array_value")
    if found is not None:
        if not isinstance(found, dict):
            raise ValueError("mistyped array")
        values = found.get("values") or []
        if not isinstance(values, list):
            raise ValueError("mistyped array")
        return [any_value(v) for v in values]
    found = _get(value, "bytesValue", "bytes_value")
    if found is not None:
        return str(found)
    raise ValueError("empty or unsupported AnyValue")


def _attributes(items: Any) -> dict[str, Any]:
    if not items:
        return {}
    if not isinstance(items, list):
        raise ValueError("mistyped attributes")
    result: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise ValueError("mistyped attribute")
        result[item["key"]] = any_value(item.get("value"))
    return result


def _list(obj: Mapping[str, Any], camel: str, snake: str) -> list[Any]:
    value = _get(obj, camel, snake)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{camel} is not a list")
    return value


def records_in_request(request: Mapping[str, Any]) -> Iterator[dict[str, object] | None]:
    """Each journal record carried by one ``ExportTraceServiceRequest`` (span events) or
    ``ExportLogsServiceRequest`` (log records); ``None`` for an event that claims a chain position but
    cannot be read (counted as malformed)."""
    for event in raw_events(request):
        if _is_chain_event(event):
            yield _event_record(event)


def raw_events(request: Mapping[str, Any]) -> Iterator[Any]:
    """The events of one OTLP JSON request as they are written: each span's events, and each log
    record as the event it carries (``name`` its ``eventName``, else its string body; its attributes;
    ``timeUnixNano``). ``ValueError`` when the request's structure is mistyped."""
    for resource_spans in _list(request, "resourceSpans", "resource_spans"):
        if not isinstance(resource_spans, dict):
            raise ValueError("mistyped resourceSpans")
        for scope_spans in _list(resource_spans, "scopeSpans", "scope_spans"):
            if not isinstance(scope_spans, dict):
                raise ValueError("mistyped scopeSpans")
            for span in _list(scope_spans, "spans", "spans"):
                if not isinstance(span, dict):
                    raise ValueError("mistyped span")
                yield from _list(span, "events", "events")
    for resource_logs in _list(request, "resourceLogs", "resource_logs"):
        if not isinstance(resource_logs, dict):
            raise ValueError("mistyped resourceLogs")
        for scope_logs in _list(resource_logs, "scopeLogs", "scope_logs"):
            if not isinstance(scope_logs, dict):
                raise ValueError("mistyped scopeLogs")
            for log in _list(scope_logs, "logRecords", "log_records"):
                yield _log_event(log)


def _log_event(log: Any) -> Any:
    """A log record as the span event it carries (a mistyped one as it is: read as malformed)."""
    if not isinstance(log, dict):
        return log
    name = _get(log, "eventName", "event_name")
    if not name:
        body = _get(log, "body", "body")
        name = _get(body, "stringValue", "string_value") if isinstance(body, dict) else None
    return {
        "name": name,
        "attributes": _get(log, "attributes", "attributes"),
        "timeUnixNano": _get(log, "timeUnixNano", "time_unix_nano"),
    }


def _is_chain_event(event: Any) -> bool:
    """Whether an event claims a chain position (any ``loom.audit.*`` attribute)."""
    if not isinstance(event, dict):
        return True
    raw = _get(event, "attributes", "attributes")
    if not isinstance(raw, list):
        return False
    return any(isinstance(i, dict) and str(i.get("key", "")).startswith("loom.audit.") for i in raw)


def _event_record(event: Any) -> dict[str, object] | None:
    if not isinstance(event, dict):
        return None
    raw = _get(event, "attributes", "attributes")
    try:
        attributes = _attributes(raw)
        time_ns = _int(_get(event, "timeUnixNano", "time_unix_nano") or 0)
        name = _get(event, "name", "name")
        if not isinstance(name, str):
            return None
    except (ValueError, TypeError, OverflowError):
        return None
    return record_from_event(name, attributes, time_ns)
