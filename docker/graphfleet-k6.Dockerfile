# syntax=docker/dockerfile:1.7
# The load-test runner: k6 (built from source at the pinned version, as tools/versions.env
# pins it for local runs) plus graphfleet's k6 scripts and the benchmark queries.
# Build from the repository root:  docker build -f docker/graphfleet-k6.Dockerfile -t ghcr.io/graphfleet/graphfleet-k6:0.1.0 .
ARG GO_VERSION=1.25
ARG K6_VERSION=v1.8.1

FROM golang:${GO_VERSION}-bookworm AS builder
ARG K6_VERSION
# Static binary: the runtime image has no libc.
ENV CGO_ENABLED=0 GOBIN=/out GOFLAGS=-trimpath
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go install -ldflags="-s -w" go.k6.io/k6@${K6_VERSION}

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=builder /out/k6 /usr/local/bin/k6
COPY loadtest/k6/ /graphfleet/k6/
# The benchmark sets: queries (and variables) to build GF_PAYLOAD files from.
COPY loadtest/sets/ /graphfleet/sets/
WORKDIR /graphfleet/k6
# scenario.js writes its JSON summary here; mount an emptyDir at /tmp with a read-only root.
ENV GF_SUMMARY=/tmp/summary.json
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/k6"]
CMD ["version"]
