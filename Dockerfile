# toolscore's container image: a cargo build stage, then a small non-root
# runtime stage. Build it from the repository root:
#
#   docker build -t toolscore:0.1.0 .
#   docker run --rm -p 4317:4317 -p 4318:4318 -p 8080:8080 -p 8081:8081 toolscore:0.1.0
#
# The image runs config/container.yaml (the embedded default, binding 0.0.0.0);
# mount another file over /etc/toolscore/config.yaml to change it. There is no
# HEALTHCHECK: orchestrators probe GET /healthz and GET /readyz on port 8080
# (the Helm chart in deploy/helm/toolscore does); `toolscore probe URL` checks
# from inside. tests/deploy checks this file: stages, numeric non-root user,
# EXPOSEd ports = the ports the config binds, hadolint, and its build stage
# replayed in the build context.

# The toolchain is pinned (the crate needs Rust 1.85+, edition 2024), and so is
# Debian: the runtime stage is Debian 12 (bookworm), so the binary is linked
# against the same glibc.
ARG RUST_VERSION=1.95.0

FROM docker.io/library/rust:${RUST_VERSION}-slim-bookworm AS build
WORKDIR /src

# make: the jemalloc allocator (tikv-jemalloc-sys) is built from C source
# with its configure script and make; the slim image has gcc but not make.
RUN apt-get update \
 && apt-get install -y --no-install-recommends make=4.3-4.1 \
 && rm -rf /var/lib/apt/lists/*

# 1. Dependencies only, cached until Cargo.toml, Cargo.lock, build.rs or the
#    protos change: a stub crate with the real manifest. Cargo reads every
#    target the manifest declares (the `pipeline` bench) before it builds
#    one, so each gets a stub too. build.rs compiles proto/ with a vendored
#    protoc, so no system protoc is needed.
COPY Cargo.toml Cargo.lock build.rs ./
COPY proto ./proto
RUN mkdir src benches \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs \
 && echo 'fn main() {}' > benches/pipeline.rs \
 && cargo build --release --locked --bin toolscore \
 && rm -rf src benches

# 2. The real source. COPY keeps the files' modification times, which can be
#    older than the stub's build: touching the crate roots makes cargo rebuild
#    the crate itself (only the crate: the dependencies stay cached).
#    The image ships the binary stripped (about 20 MB instead of 127 MB of
#    line tables and symbols); the symbols are kept beside it, linked by
#    `.gnu_debuglink`, in the debug-symbols stage below.
COPY src ./src
COPY benches ./benches
COPY config ./config
RUN touch src/main.rs src/lib.rs \
 && cargo build --release --locked --bin toolscore
# Stripping is a step of its own, so that a replay of the cargo steps with
# `cargo fetch` in place of the build (which makes no binary) leaves it out.
RUN objcopy --only-keep-debug target/release/toolscore target/toolscore.debug \
 && objcopy --strip-all --add-gnu-debuglink=target/toolscore.debug target/release/toolscore /toolscore \
 && mkdir data

# The stripped binary's symbols and line tables, for a backtrace or a core
# dump: `docker build --target debug-symbols --output type=local,dest=out .`
# writes out/toolscore.debug (gdb and addr2line find it by its debuglink).
FROM scratch AS debug-symbols
COPY --from=build /src/target/toolscore.debug /toolscore.debug

# The runtime: glibc and libgcc, no shell, no package manager. The user is
# distroless's `nonroot`, by number: Kubernetes' runAsNonRoot can only check
# a numeric user.
FROM gcr.io/distroless/cc-debian12:nonroot AS runtime

ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="toolscore" \
      org.opencontainers.image.description="Scores how AI agents use their tools, live, from their OpenTelemetry traces" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="gcr.io/distroless/cc-debian12:nonroot"

COPY --from=build /toolscore /usr/local/bin/toolscore
COPY LICENSE /usr/share/doc/toolscore/LICENSE
# The crates compiled into the binary and their licences' texts
# (cargo-about; .ci/run checks it is current).
COPY THIRD-PARTY-LICENSES.txt /usr/share/doc/toolscore/THIRD-PARTY-LICENSES.txt
COPY config/container.yaml /etc/toolscore/config.yaml
# The results database (store.sqlite.path), owned by the user toolscore runs
# as; mount a volume here to keep results across containers.
COPY --from=build --chown=65532:65532 /src/data /var/lib/toolscore
VOLUME ["/var/lib/toolscore"]

# OTLP/gRPC, OTLP/HTTP, HTTP API (scores, /healthz, /readyz, /metrics), gRPC query API.
EXPOSE 4317 4318 8080 8081
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/toolscore"]
CMD ["serve", "--config", "/etc/toolscore/config.yaml"]
