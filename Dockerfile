# syntax=docker/dockerfile:1
# attnserve container: build stage and a small runtime stage, both Debian 13.
#
# Both stages install from deploy/debian-packages.txt (the one package list,
# also read by ./dev and CI): the build stage takes the `build` role, the
# runtime stage only the `runtime` role (shared libraries, no compilers).
# The build runs exactly the commands of `./dev build release`, so CI's build
# exercises the same steps (tests/deploy/test_deploy_dockerfile.py checks it).
#
#   docker build -t attnserve:0.1.0 .
#   docker run --read-only -p 50051:50051 -p 8080:8080 \
#     -v "$PWD/models:/models:ro" -v attnserve-state:/var/lib/attnserve \
#     attnserve:0.1.0 --encoder-model=/models/all-MiniLM-L6-v2 \
#     --decoder-model=/models/stories260K/stories260K.gguf
#
# Models: mount them read-only under /models (nothing is baked into the image).
# Writable paths: only the declared volume /var/lib/attnserve (TMPDIR points
# there), so the container runs with a read-only root filesystem.

ARG DEBIAN_IMAGE=debian:trixie-slim

# ------------------------------------------------------------------ build --
FROM ${DEBIAN_IMAGE} AS build
# pipefail: a failing awk must fail the install, not install nothing.
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY deploy/debian-packages.txt /tmp/debian-packages.txt
RUN apt-get update \
 && awk '!/^#/ && NF >= 2 && $1 == "build" { print $2 }' /tmp/debian-packages.txt \
    | xargs env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The same two commands as `./dev build release` (cmd_build in ./dev).
RUN cmake --preset release -B build/release \
 && cmake --build build/release --parallel "$(nproc)"

# ---------------------------------------------------------------- runtime --
FROM ${DEBIAN_IMAGE} AS runtime
LABEL org.opencontainers.image.title="attnserve" \
      org.opencontainers.image.description="Transformer inference service (gRPC + HTTP) on oneDNN" \
      org.opencontainers.image.documentation="docs/operations.md"
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY deploy/debian-packages.txt /tmp/debian-packages.txt
RUN apt-get update \
 && awk '!/^#/ && NF >= 2 && $1 == "runtime" { print $2 }' /tmp/debian-packages.txt \
    | xargs env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/debian-packages.txt
# A fixed numeric UID/GID so Kubernetes' runAsNonRoot can verify it and
# mounted volumes can be chowned to it (fsGroup 10001).
RUN groupadd --gid 10001 attnserve \
 && useradd --uid 10001 --gid 10001 --home-dir /var/lib/attnserve --no-create-home \
      --shell /usr/sbin/nologin attnserve \
 && mkdir -p /models /var/lib/attnserve \
 && chown 10001:10001 /var/lib/attnserve
COPY --from=build /src/build/release/attnserve /usr/local/bin/attnserve
ENV TMPDIR=/var/lib/attnserve
VOLUME ["/var/lib/attnserve"]
USER 10001:10001
WORKDIR /var/lib/attnserve
# gRPC (attnserve.v1.Inference, grpc.health.v1.Health, reflection) and HTTP
# (/healthz, /readyz, /metrics, /v1/...).
EXPOSE 50051 8080
# The binary probes itself: no curl in the image.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/attnserve", "healthcheck", "--http-port", "8080"]
ENTRYPOINT ["/usr/local/bin/attnserve"]
CMD ["--grpc-port=50051", "--http-port=8080", "--listen-address=0.0.0.0"]
