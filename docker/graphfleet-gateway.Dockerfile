# syntax=docker/dockerfile:1.7
# The federation gateway. The operator mounts the supergraph at /etc/graphfleet and passes the args.
# Build from the repository root:  docker build -f docker/graphfleet-gateway.Dockerfile -t ghcr.io/graphfleet/graphfleet-gateway:0.1.0 .
# (scripts/images.sh build --engine docker builds every image; kind-load loads them into kind.)
#
# Without a registry (scripts/images.sh, podman): --build-arg BINARIES=prebuilt takes the
# release binary from the root of the build context instead of compiling it, and
# --build-arg RUNTIME_BASE=<local image> replaces distroless; the rust and distroless
# images are then never pulled (BuildKit and buildah skip stages the target does not use).
ARG RUST_VERSION=1.95
ARG BINARIES=builder
ARG RUNTIME_BASE=gcr.io/distroless/cc-debian12:nonroot

FROM rust:${RUST_VERSION}-bookworm AS builder
# gateway/build.rs installs GraphiQL's pinned npm packages to build them into the binary.
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The whole workspace: cargo resolves every member even when building one package.
COPY . .
# Cache mounts keep the registry and target dir across builds; the binary is copied out
# of the cached target dir because cache mounts are not part of the image.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target,id=graphfleet-release-target \
    cargo build --release --locked -p graphfleet-gateway --bin graphfleet-gateway \
 && install -D -m 0755 target/release/graphfleet-gateway /out/graphfleet-gateway

# A binary built outside (target/release/graphfleet-gateway), at the build context's root.
FROM scratch AS prebuilt
COPY graphfleet-gateway /out/graphfleet-gateway

FROM ${BINARIES} AS binaries

# glibc + libgcc + CA certificates, no shell, no package manager; uid/gid 65532.
FROM ${RUNTIME_BASE}
COPY --from=binaries /out/graphfleet-gateway /usr/local/bin/graphfleet-gateway
USER 65532:65532
EXPOSE 4000
ENTRYPOINT ["/usr/local/bin/graphfleet-gateway"]
CMD ["--supergraph", "/etc/graphfleet/supergraph.graphql", "--listen", "0.0.0.0:4000"]
