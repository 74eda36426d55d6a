#!/usr/bin/env sh
# The same hop with rotel (a Rust OTLP collector shipped on PyPI: `pip install rotel`), e.g. in front
# of a tracing backend such as Arize Phoenix. rotel has no otelcol YAML and no file archive exporter:
# use it as a forwarding hop; keep the otelcol-contrib `file/audit` archive (or the journal) as the record.
# Phoenix serves its UI and OTLP/HTTP (/v1/traces) on 6006 and OTLP/gRPC on 4317: by default rotel sends
# gRPC to Phoenix's 4317 and listens on 14317/14318, out of Phoenix's way on the same host.
#   ROTEL_GRPC / ROTEL_HTTP: where rotel listens, i.e. where the application's chained exporter sends
#     (OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:14317 with LOOM_OTEL_CHAIN_INNER=otlp_proto_grpc)
#   BACKEND / BACKEND_PROTOCOL: the next hop's OTLP endpoint and protocol (grpc or http)
exec rotel-agent start \
  --otlp-grpc-endpoint "${ROTEL_GRPC:-127.0.0.1:14317}" \
  --otlp-http-endpoint "${ROTEL_HTTP:-127.0.0.1:14318}" \
  --exporter otlp \
  --otlp-exporter-endpoint "${BACKEND:-http://127.0.0.1:4317}" \
  --otlp-exporter-protocol "${BACKEND_PROTOCOL:-grpc}"
