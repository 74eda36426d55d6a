"""The runtime: configuration and settings, what runs in the background and how it ends, fork safety, zero-code
start, tracer providers, warnings, callbacks, execution scopes, and the small helpers every room shares
(memos, request and response shapes, the application's hooks)."""
