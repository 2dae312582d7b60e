# syntax=docker/dockerfile:1.7
# The load-test runner: k6 (built from source at the pinned version, as tools/versions.env
# pins it for local runs) plus graphfleet's k6 scripts and the benchmark queries.
# Build from the repository root:  docker build -f docker/graphfleet-k6.Dockerfile -t ghcr.io/graphfleet/graphfleet-k6:0.1.0 .
#
# Without a registry (scripts/images.sh, podman): --build-arg BINARIES=prebuilt takes the
# k6 binary from the root of the build context (the tool cache's pinned k6) instead of
# compiling it, and --build-arg RUNTIME_BASE=<local image> replaces distroless; the golang
# and distroless images are then never pulled. The tool cache's k6 may link glibc (cgo), so
# the local base is the glibc one the Rust images use, a superset of distroless/static.
ARG GO_VERSION=1.25
ARG K6_VERSION=v1.8.1
ARG BINARIES=builder
ARG RUNTIME_BASE=gcr.io/distroless/static-debian12:nonroot

FROM golang:${GO_VERSION}-bookworm AS builder
ARG K6_VERSION
# Static binary: the runtime image has no libc.
ENV CGO_ENABLED=0 GOBIN=/out GOFLAGS=-trimpath
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go install -ldflags="-s -w" go.k6.io/k6@${K6_VERSION}

# A k6 built outside (scripts/tools.sh k6), at the build context's root.
FROM scratch AS prebuilt
COPY k6 /out/k6

FROM ${BINARIES} AS binaries

FROM ${RUNTIME_BASE}
COPY --from=binaries /out/k6 /usr/local/bin/k6
COPY bench/k6/ /graphfleet/k6/
# The benchmark sets: queries (and variables) to build GF_PAYLOAD files from.
COPY bench/sets/ /graphfleet/sets/
WORKDIR /graphfleet/k6
# scenario.js writes its JSON summary here; mount an emptyDir at /tmp with a read-only root.
ENV GF_SUMMARY=/tmp/summary.json
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/k6"]
CMD ["version"]
