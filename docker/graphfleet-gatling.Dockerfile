# syntax=docker/dockerfile:1.7
# The Gatling load generator (LoadTest `spec.executor: gatling`): a headless JRE, Gatling's
# jars from Maven Central at the version bench/gatling/pom.xml pins, and graphfleet's
# simulation (bench/gatling). The operator runs it with the arguments in CMD.
# Build from the repository root:
#   docker build -f docker/graphfleet-gatling.Dockerfile -t ghcr.io/graphfleet/graphfleet-gatling:0.1.0 .
#
# Without a registry (scripts/images.sh, podman): --build-arg BINARIES=prebuilt takes the
# jars from lib/ at the root of the build context (scripts/gatling.sh's build) instead of
# running Maven, and --build-arg RUNTIME_BASE=<local image> replaces distroless; the maven
# and distroless images are then never pulled. The local base is the cc one plus Debian's
# openjdk-17-jre-headless, with /usr/bin/java linked as in distroless's java17 image.
ARG MAVEN_IMAGE=maven:3.9-eclipse-temurin-17
ARG BINARIES=builder
ARG RUNTIME_BASE=gcr.io/distroless/java17-debian12:nonroot

FROM ${MAVEN_IMAGE} AS builder
WORKDIR /src
COPY bench/gatling/ ./
RUN --mount=type=cache,target=/root/.m2 \
    mvn -B --no-transfer-progress package \
    && mkdir -p /out/lib && cp target/lib/*.jar target/graphfleet-gatling.jar /out/lib/

# Jars built outside (scripts/gatling.sh), in lib/ at the build context's root.
FROM scratch AS prebuilt
COPY lib/ /out/lib/

FROM ${BINARIES} AS binaries

FROM ${RUNTIME_BASE}
COPY --from=binaries /out/lib/ /graphfleet/gatling/lib/
# The benchmark sets: queries (and variables) to build GF_PAYLOAD files from.
COPY bench/sets/ /graphfleet/sets/
WORKDIR /graphfleet/gatling
# The simulation writes its JSON summary here; mount an emptyDir at /tmp with a read-only root
# (the JVM and Netty's native libraries also use /tmp).
ENV GF_SUMMARY=/tmp/summary.json
USER 65532:65532
# The heap follows the container's memory limit; no hsperfdata files.
ENTRYPOINT ["/usr/bin/java", "-XX:MaxRAMPercentage=75", "-XX:-UsePerfData", "-cp", "/graphfleet/gatling/lib/*"]
# Main runs the simulation through Gatling's runner (no HTML report; results folder in /tmp).
CMD ["dev.graphfleet.gatling.Main"]
