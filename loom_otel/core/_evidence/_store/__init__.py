"""The reasoning store: the protocol, sealed envelopes, ``store_from_uri``, and the file and fsspec stores."""
