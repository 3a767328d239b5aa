# Linux image of switchyard (the ovs dataplane and any built-in driver).
# Build: docker build -t ghcr.io/switchyard-proxy/switchyard:0.1.0 .
# The image holds only the static binary; Open vSwitch itself runs on the
# node (the chart mounts its run directory).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/switchyard ./cmd/switchyard

# ovs-appctl is used to flush stale UDP conntrack entries; the base image
# carries the Open vSwitch client tools only.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends openvswitch-common \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/switchyard /usr/local/bin/switchyard
ENTRYPOINT ["/usr/local/bin/switchyard"]
