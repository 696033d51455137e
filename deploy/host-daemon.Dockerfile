# campfire host-daemon image (build context: the repository root).
# Run with `host ...` (docker-compose.yml, k8s/); `join` and `simulate` work too.

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin host-daemon

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10002 --no-create-home --home-dir /nonexistent campfire-host
COPY --from=build /src/target/release/host-daemon /usr/local/bin/host-daemon
USER campfire-host
EXPOSE 9091
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/host-daemon"]
