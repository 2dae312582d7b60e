# syntax=docker/dockerfile:1.7
# The benchmark subgraph server (package graphfleet-bench-subgraphs); every set is compiled in.
# Build from the repository root:  docker build -f docker/graphfleet-subgraphs.Dockerfile -t ghcr.io/graphfleet/graphfleet-subgraphs:0.1.0 .
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
WORKDIR /src
# The whole workspace: cargo resolves every member even when building one package.
COPY . .
# Cache mounts keep the registry and target dir across builds; the binary is copied out
# of the cached target dir because cache mounts are not part of the image.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target,id=graphfleet-release-target \
    cargo build --release --locked -p graphfleet-bench-subgraphs --bin graphfleet-subgraphs \
 && install -D -m 0755 target/release/graphfleet-subgraphs /out/graphfleet-subgraphs

# A binary built outside (target/release/graphfleet-subgraphs), at the build context's root.
FROM scratch AS prebuilt
COPY graphfleet-subgraphs /out/graphfleet-subgraphs

FROM ${BINARIES} AS binaries

# glibc + libgcc + CA certificates, no shell, no package manager; uid/gid 65532.
FROM ${RUNTIME_BASE}
COPY --from=binaries /out/graphfleet-subgraphs /usr/local/bin/graphfleet-subgraphs
USER 65532:65532
EXPOSE 4200
ENTRYPOINT ["/usr/local/bin/graphfleet-subgraphs"]
CMD ["--set", "fed", "--listen", "0.0.0.0:4200"]
