"""Vendor SDK clients wired to the simulator's transport (the SDKs are imported lazily)."""

from __future__ import annotations

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

    def transport(self) -> httpx2.MockTransport:
        raise NotImplementedError

    def anthropic_client(self, **kwargs: Any) -> anthropic.Anthropic:
        import anthropic
        import httpx2

        kwargs.setdefault("http_client", httpx2.Client(transport=self.transport()))
        return anthropic.Anthropic(**_anthropic_defaults(kwargs))

    def async_anthropic_client(self, **kwargs: Any) -> anthropic.AsyncAnthropic:
        import anthropic
        import httpx2

        kwargs.setdefault("http_client", httpx2.AsyncClient(transport=self.transport()))
        return anthropic.AsyncAnthropic(**_anthropic_defaults(kwargs))

    def genai_client(self, **kwargs: Any) -> genai.Client:
        """A ``google.genai.Client``; its ``.aio`` side uses the same simulator."""
        from google import genai
        from google.genai import types

        transport = self.transport()
        kwargs.setdefault("api_key", "sim")
        kwargs.setdefault(
            "http_options",
            types.HttpOptions(
                base_url=GEMINI_BASE_URL,
                client_args={"transport": transport},
                async_client_args={"transport": transport},
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


def _anthropic_defaults(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"api_key": "sim", "base_url": ANTHROPIC_BASE_URL, "max_retries": 0, "open_telemetry": False, **kwargs}


def _openai_defaults(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"api_key": "sim", "base_url": OPENAI_BASE_URL, "max_retries": 0, **kwargs}
