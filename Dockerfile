# Linux image of switchyard (the ovs dataplane and any built-in driver).
# Build: docker build -t ghcr.io/switchyard-proxy/switchyard:0.1.0 .
# It holds three static binaries, switchyard, switchyard-cni and
# containernetworking's portmap plugin as switchyard-portmap (the two
# plugins `switchyard install` copies to the node's CNI bin directory;
# portmap serves pods' hostPorts), and
# Debian's nft, which knftables drives for the host's nftables table (as
# kube-proxy's nftables mode does). Open vSwitch itself runs on the node
# (the chart mounts its run directory); no OVS tool is needed: switchyard
# speaks OVSDB, OpenFlow and ovs-vswitchd's control socket itself.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/switchyard ./cmd/switchyard \
 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/switchyard-cni ./cmd/switchyard-cni \
 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/switchyard-portmap github.com/containernetworking/plugins/plugins/meta/portmap

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends nftables \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/switchyard /out/switchyard-cni /out/switchyard-portmap /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/switchyard"]
