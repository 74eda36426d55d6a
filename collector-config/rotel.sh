#!/usr/bin/env sh
# The same hop with rotel (a Rust OTLP collector shipped on PyPI: `pip install rotel`), e.g. in front
# of a tracing backend such as Arize Phoenix. rotel has no otelcol YAML and no file archive exporter:
# use it as a forwarding hop; keep the otelcol-contrib `file/audit` archive (or the journal) as the record.
#   ROTEL_GRPC / ROTEL_HTTP: where the application's chained exporter sends (OTEL_EXPORTER_OTLP_ENDPOINT)
#   BACKEND: the next hop's OTLP/gRPC endpoint
exec rotel-agent start \
  --otlp-grpc-endpoint "${ROTEL_GRPC:-127.0.0.1:4317}" \
  --otlp-http-endpoint "${ROTEL_HTTP:-127.0.0.1:4318}" \
  --exporter otlp \
  --otlp-exporter-endpoint "${BACKEND:-http://127.0.0.1:6006}" \
  --otlp-exporter-protocol grpc
