"""A journal, a runtime over it and one capture: see ``tests.support.journaled``."""

from tests.support.journaled import do_capture, journal, runtime  # noqa: F401
