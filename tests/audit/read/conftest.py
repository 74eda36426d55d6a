"""The readback fixtures (a real capture pipeline over every store backend): see ``tests.support.evidence``."""

from tests.support.evidence import _isolated, blobs, new_id, recorder, store  # noqa: F401
