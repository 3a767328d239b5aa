#!/usr/bin/env bash
# Installs what the OVS driver's integration tests need, if missing:
# Debian's Open vSwitch (userspace datapath; the tests start their own
# private daemons, never the system service), iproute2, ethtool, nftables
# (the driver's host side).
set -euo pipefail
need=(ovsdb-tool ovsdb-server ovs-vswitchd ovs-vsctl ovs-ofctl ovs-appctl ip ethtool nft)
missing=()
for b in "${need[@]}"; do command -v "$b" >/dev/null 2>&1 || missing+=("$b"); done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "ensure-ovs: installing Open vSwitch tools (missing: ${missing[*]})"
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-ovs: need root to install packages and make network namespaces" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends openvswitch-switch openvswitch-common ethtool iproute2 nftables >/dev/null
for b in "${need[@]}"; do command -v "$b" >/dev/null || { echo "ensure-ovs: $b still missing" >&2; exit 1; }; done
echo "ensure-ovs: $(ovs-vswitchd --version | head -1)"
