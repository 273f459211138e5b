# Two images from one build of the one binary, used by docker-compose.yml:
#   docker build -t muster .                          the server (`muster serve`), the default target
#   docker build --target runner -t muster-runner .   `muster runner` with git, Node and the pinned agent CLIs
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked

# The runner: the machine the agents run on. The CLIs come before the binary so that a code change
# does not reinstall them; their versions are .ci/agent-clis.txt's, the builds the tests run.
FROM debian:bookworm-slim AS runner
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates git openssh-client nodejs npm \
    && rm -rf /var/lib/apt/lists/*
COPY .ci/agent-clis.txt /tmp/agent-clis.txt
RUN set -e; awk '!/^#/ && NF' /tmp/agent-clis.txt > /tmp/pins; \
    npm install --global --no-audit --no-fund --update-notifier=false --loglevel=error $(cut -d' ' -f2 /tmp/pins); \
    for cli in $(cut -d' ' -f1 /tmp/pins); do timeout 60 "$cli" --version </dev/null; done; \
    npm cache clean --force; rm /tmp/pins /tmp/agent-clis.txt
# Not root: the sandbox drops every capability anyway, and a runner needs none. The two folders exist in
# the image, owned by the runner, so that named volumes mounted on them start with that owner.
RUN useradd --system --create-home --home-dir /home/muster --shell /usr/sbin/nologin muster \
    && install -d -o muster -g muster /var/lib/muster-runner/state /var/lib/muster-runner/runs
ENV MUSTER_RUNNER_DIR=/var/lib/muster-runner/state \
    MUSTER_RUNS_DIR=/var/lib/muster-runner/runs
COPY --from=build /src/target/release/muster /usr/local/bin/muster
USER muster
WORKDIR /home/muster
ENTRYPOINT []
CMD ["muster", "runner"]

# The server (the last stage, so the default target): board, API and, unless --no-runner, an embedded runner.
FROM debian:bookworm-slim AS server
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl git \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/muster /usr/local/bin/muster
EXPOSE 7777
ENTRYPOINT []
CMD ["muster", "serve", "--addr", "0.0.0.0:7777", "--data-dir", "/data"]
