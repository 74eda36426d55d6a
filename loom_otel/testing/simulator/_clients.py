"""Vendor SDK clients wired to the simulator's transport (the SDKs are imported lazily)."""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import anthropic
    import httpx2
    import openai
    from google import genai

ANTHROPIC_BASE_URL: Final = "https://api.anthropic.sim"
GEMINI_BASE_URL: Final = "https://generativelanguage.sim"
OPENAI_BASE_URL: Final = "https://api.openai.sim/v1"


class ClientFactories:
    """Mixin: ``Simulator`` methods building SDK clients; keyword arguments override the defaults."""

    def transport(self, http: ModuleType | None = None) -> httpx2.MockTransport:
        raise NotImplementedError

    def anthropic_client(self, **kwargs: Any) -> anthropic.Anthropic:
        import anthropic

        http = anthropic_http()
        kwargs.setdefault("http_client", http.Client(transport=self.transport(http)))
        return anthropic.Anthropic(**_anthropic_defaults(kwargs))

    def async_anthropic_client(self, **kwargs: Any) -> anthropic.AsyncAnthropic:
        import anthropic

        http = anthropic_http()
        kwargs.setdefault("http_client", http.AsyncClient(transport=self.transport(http)))
        return anthropic.AsyncAnthropic(**_anthropic_defaults(kwargs))

    def genai_client(self, **kwargs: Any) -> genai.Client:
        """A ``google.genai.Client``; its ``.aio`` side uses the same simulator. The httpx2 clients are
        handed in whole: google-genai 2.x builds its own clients with httpx, which refuses an httpx2
        transport, but sends through given httpx2 clients (3.x accepts either)."""
        import httpx2
        from google import genai
        from google.genai import types

        transport = self.transport()
        kwargs.setdefault("api_key", "sim")
        kwargs.setdefault(
            "http_options",
            types.HttpOptions(
                base_url=GEMINI_BASE_URL,
                httpx_client=httpx2.Client(transport=transport),
                httpx_async_client=httpx2.AsyncClient(transport=transport),
            ),
        )
        return genai.Client(**kwargs)

    def openai_client(self, **kwargs: Any) -> openai.OpenAI:
        import httpx2
        import openai

        kwargs.setdefault("http_client", httpx2.Client(transport=self.transport()))
        return openai.OpenAI(**_openai_defaults(kwargs))

    def async_openai_client(self, **kwargs: Any) -> openai.AsyncOpenAI:
        import httpx2
        import openai

        kwargs.setdefault("http_client", httpx2.AsyncClient(transport=self.transport()))
        return openai.AsyncOpenAI(**_openai_defaults(kwargs))


def anthropic_http() -> ModuleType:
    """The HTTP library the installed anthropic SDK sends with: httpx2 (anthropic >= 1), httpx before."""
    import anthropic

    return importlib.import_module(anthropic.DefaultHttpxClient.__mro__[1].__module__.partition(".")[0])


def _anthropic_defaults(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The SDK's own tracing (anthropic >= 2.0, on by default) is turned off where the SDK has it."""
    import anthropic

    defaults: dict[str, Any] = {"api_key": "sim", "base_url": ANTHROPIC_BASE_URL, "max_retries": 0}
    if "open_telemetry" in inspect.signature(anthropic.Anthropic).parameters:
        defaults["open_telemetry"] = False
    return {**defaults, **kwargs}


def _openai_defaults(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"api_key": "sim", "base_url": OPENAI_BASE_URL, "max_retries": 0, **kwargs}
