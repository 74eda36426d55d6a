"""The viewers of the HTTP tests and the bearer tokens that prove them (``bearer_authenticator``)."""

from __future__ import annotations

from loom_otel.live import Viewer
from loom_otel.live.asgi import Authenticator, bearer_authenticator

TOKENS = {
    "alice-acme-token-0001": Viewer("alice", "acme"),
    "olga-acme-token-00002": Viewer("olga", "acme"),
    "mallory-acme-token-03": Viewer("mallory", "acme"),
    "alice-globex-token-04": Viewer("alice", "globex"),
    "alice-alone-token-005": Viewer("alice"),
}
ALICE = {"Authorization": "Bearer alice-acme-token-0001"}
OLGA = {"Authorization": "Bearer olga-acme-token-00002"}
MALLORY = {"Authorization": "Bearer mallory-acme-token-03"}
ALICE_GLOBEX = {"Authorization": "Bearer alice-globex-token-04"}
ALICE_NO_TENANT = {"Authorization": "Bearer alice-alone-token-005"}
ALICE_NO_TENANT_TOKEN = "alice-alone-token-005"


def authenticator() -> Authenticator:
    return bearer_authenticator(TOKENS)
