# campfire lobby-server: multi-stage build, slim non-root runtime.
# The build step is the same command CI runs (.ci/run).

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin lobby-server

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --create-home --home-dir /var/lib/campfire campfire \
    && mkdir -p /var/lib/campfire/data \
    && chown -R campfire:campfire /var/lib/campfire
COPY --from=build /src/target/release/lobby-server /usr/local/bin/lobby-server
USER campfire
WORKDIR /var/lib/campfire
ENV LOBBY_LISTEN=0.0.0.0:8080 \
    LOBBY_DATABASE_URL=sqlite:///var/lib/campfire/data/lobby.db \
    LOBBY_LOG_FORMAT=json
VOLUME ["/var/lib/campfire/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/lobby-server"]
