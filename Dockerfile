# specstorm in a container image: the binary (bench, reference server,
# merge, audit), the shipped scenarios, statement files and specs, so a
# pod or a CI job can run `specstorm run scenarios/...` as in a checkout.
#
#   docker build -t specstorm:dev --build-arg GIT_COMMIT=$(git rev-parse --short=12 HEAD) .
#   docker run --rm specstorm:dev --version
#   docker run --rm -v "$PWD/results:/results" specstorm:dev \
#     run scenarios/smoke.toml --no-tui --out /results/smoke
#
# Run folders go to /results (a volume). The image runs as an unprivileged
# user (uid 10001); give a mounted volume that group (Kubernetes:
# securityContext.fsGroup: 10001). examples/distributed/ runs it as the
# shards of one run on Kubernetes.

# The crate's rust-version (Cargo.toml) or newer.
ARG RUST_VERSION=1.89

FROM rust:${RUST_VERSION}-slim-bookworm AS build
WORKDIR /src
# The crate alone: the build needs only its manifest, sources and the
# files the binary embeds (scenarios, statement files, docs/cli.md).
COPY Cargo.toml Cargo.lock build.rs ./
COPY src src
COPY scenarios scenarios
COPY targets targets
COPY specs specs
COPY docs docs
# The commit --version reports (no .git in the build context).
ARG GIT_COMMIT=unknown
ENV SPECSTORM_GIT_COMMIT=${GIT_COMMIT}
# No line tables or symbols in the image's binary: a smaller image.
ENV CARGO_PROFILE_RELEASE_DEBUG=false \
    CARGO_PROFILE_RELEASE_STRIP=symbols
RUN cargo build --release --locked --bin specstorm \
 && cp target/release/specstorm /usr/local/bin/specstorm

FROM debian:bookworm-slim
# CA roots for https targets; nothing else is needed (SQLite is built in).
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 specstorm \
 && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin specstorm \
 && mkdir -p /results && chown specstorm:specstorm /results
COPY --from=build /usr/local/bin/specstorm /usr/local/bin/specstorm
COPY scenarios /opt/specstorm/scenarios
COPY targets /opt/specstorm/targets
COPY specs /opt/specstorm/specs
WORKDIR /opt/specstorm
USER 10001:10001
# No terminal in a pod: progress lines, not the dashboard.
ENV CI=true
VOLUME /results
ENTRYPOINT ["specstorm"]
CMD ["--help"]
