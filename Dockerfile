# A small image with the one binary. Used by docker-compose.yml.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl git \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/muster /usr/local/bin/muster
EXPOSE 7777
ENTRYPOINT []
CMD ["muster", "serve", "--addr", "0.0.0.0:7777", "--data-dir", "/data"]
