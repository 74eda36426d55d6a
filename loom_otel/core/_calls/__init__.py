"""The call path: the vendor-adapter contract, the one call skeleton, the model call and its
identity, stream proxies, capture, the instrumentor base."""
