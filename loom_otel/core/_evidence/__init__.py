"""The evidence: what loom-otel writes and how it is read back (the record schema, canonical JSON and digests, the
response layout, the reasoning shapes, the journal, the store, and their durability)."""
