"""GenAI semantic-convention values every vendor mapping derives the same way."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Final
from urllib.parse import urlsplit

from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._evidence._attributes import AttributeValue

__all__ = [
    "SCHEMA_URL",
    "finish_reasons",
    "model_name",
    "request_parameters",
    "server_attributes",
]

SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.41.0"
"""The semantic-conventions version the model-call span and the GenAI metrics follow."""


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _strings(value: object) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return None


_PARAMETERS: Final[tuple[tuple[str, Callable[[object], AttributeValue | None]], ...]] = (
    (attr.GEN_AI_REQUEST_MAX_TOKENS, _integer),
    (attr.GEN_AI_REQUEST_TEMPERATURE, _number),
    (attr.GEN_AI_REQUEST_TOP_P, _number),
    (attr.GEN_AI_REQUEST_TOP_K, _number),
    (attr.GEN_AI_REQUEST_STOP_SEQUENCES, _strings),
    (attr.GEN_AI_REQUEST_SEED, _integer),
    (attr.GEN_AI_REQUEST_FREQUENCY_PENALTY, _number),
    (attr.GEN_AI_REQUEST_PRESENCE_PENALTY, _number),
    (attr.GEN_AI_REQUEST_CHOICE_COUNT, _integer),
)


def request_parameters(
    value_of: Callable[[str], object], names: Mapping[str, str], into: dict[str, AttributeValue]
) -> None:
    """The ``gen_ai.request.*`` parameters the request sets, typed as the conventions say (doubles,
    ints, string arrays). ``names`` maps a convention key to the vendor's parameter name; ``value_of``
    reads one vendor parameter. A choice count of 1 is the default and is left out."""
    for key, convert in _PARAMETERS:
        name = names.get(key)
        if name is None:
            continue
        given = value_of(name)
        if given is None:  # most parameters of most requests
            continue
        value = convert(given)
        if value is None or (key == attr.GEN_AI_REQUEST_CHOICE_COUNT and value == 1):
            continue
        into[key] = value


def finish_reasons(reasons: Sequence[str], table: Mapping[str, str]) -> tuple[str, ...]:
    """The vendor's reasons mapped onto the conventions' values (``stop``, ``length``, ``tool_call``,
    ``content_filter``, ``error``); a reason the table does not know is kept, lower-cased. A tuple, as
    every sequence a span attribute gets from loom-otel (``_as_built``)."""
    return tuple([table.get(reason) or reason.lower() for reason in reasons])


def server_attributes(base_url: object, into: dict[str, AttributeValue]) -> None:
    """``server.address`` and ``server.port`` from an SDK client's base URL (an ``httpx2.URL`` or a string);
    the port defaults by scheme. A client's base URL is parsed once, and not formatted again while the
    calls go through one client."""
    global _last
    if base_url is None:
        return
    last = _last
    if last[0] is not base_url:
        last = _last = (base_url, _server(str(base_url)))
    into.update(last[1])


_last: tuple[object, tuple[tuple[str, AttributeValue], ...]] = (None, ())
"""The last base URL ``server_attributes`` read, and its attributes (one URL object kept, not one per
client: an application may make a client per call)."""


@functools.lru_cache(maxsize=256)
def _server(base_url: str) -> tuple[tuple[str, AttributeValue], ...]:
    url = urlsplit(base_url)
    if not url.hostname:
        return ()
    return ((attr.SERVER_ADDRESS, url.hostname), (attr.SERVER_PORT, url.port or (443 if url.scheme == "https" else 80)))


def model_name(value: object) -> str:
    """The request's model as a string ("" when absent)."""
    return value if isinstance(value, str) else str(value or "")
