"""Continuation (ADR D5): the one drop rule, binding records, reasoning put back from the store."""
