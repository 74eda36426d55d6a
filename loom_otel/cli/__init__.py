"""The ``loom-otel`` command."""
