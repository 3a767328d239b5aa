#!/usr/bin/env bash
# Fetches Debian 13's Open vSwitch (3.5 today) into a cache outside the
# repository, once, and prints a directory of commands that run it here:
# ovsdb-tool, ovsdb-server, ovs-vswitchd, ovs-vsctl, ovs-ofctl, ovs-appctl,
# and share/openvswitch (its schema). Debian 12 ships 3.1, whose userspace
# conntrack the driver treats differently (docs/ovs.md, "Source-port
# clashes"); `make ovs-next` runs the tests of that difference on this one.
#
# Debian 13's binaries need its C library, so its own (and every library
# they link) is fetched with them, and each command runs through Debian
# 13's dynamic loader; nothing is installed on the machine. The archive's
# InRelease is checked with the machine's Debian keyring, the package index
# against it, and each package against the index.
set -euo pipefail

MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=trixie
CACHE=${SWITCHYARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# Open vSwitch and what its commands link (their Depends, closed over, as
# of 3.5.0-1+b1); a library added later makes the loader name it.
PACKAGES="openvswitch-common openvswitch-switch libc6 libgcc-s1 libbpf1 libcap-ng0 libelf1t64 libevent-2.1-7t64 libnuma1 libssl3t64 libunbound8 libxdp1 libzstd1 zlib1g"

missing=()
for b in curl gpgv xz dpkg-deb; do command -v "$b" >/dev/null 2>&1 || missing+=("$b"); done
if [ ${#missing[@]} -gt 0 ]; then
	echo "ensure-ovs-next: installing ${missing[*]}" >&2
	[ "$(id -u)" -eq 0 ] || { echo "ensure-ovs-next: need root to install ${missing[*]}" >&2; exit 1; }
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends curl gpgv xz-utils dpkg >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fetch() { curl -fsS --retry 3 --max-time 300 -o "$2" "$MIRROR/$1"; }

fetch "dists/$SUITE/InRelease" "$work/InRelease"
gpgv --keyring "$KEYRING" --output "$work/Release" "$work/InRelease" 2>/dev/null ||
	{ echo "ensure-ovs-next: $SUITE's InRelease does not verify with $KEYRING" >&2; exit 1; }
index=main/binary-amd64/Packages.xz
want=$(awk -v f="$index" '/^SHA256:/{s=1; next} /^[^ ]/{s=0} s && $3==f {print $1}' "$work/Release")
fetch "dists/$SUITE/$index" "$work/Packages.xz"
echo "$want  $work/Packages.xz" | sha256sum -c --quiet - >&2
xz -dc "$work/Packages.xz" > "$work/Packages"

# name version filename sha256, one line per package wanted
awk -v want=" $PACKAGES " '
	/^Package: /  { p=$2; v=""; f=""; s="" }
	/^Version: /  { v=$2 }
	/^Filename: / { f=$2 }
	/^SHA256: /   { s=$2 }
	/^$/ { if (index(want, " " p " ") && !(p in done)) { print p, v, f, s; done[p]=1 } }
' "$work/Packages" > "$work/picked"
for p in $PACKAGES; do
	grep -q "^$p " "$work/picked" || { echo "ensure-ovs-next: $p is not in $SUITE's index" >&2; exit 1; }
done
version=$(awk '$1=="openvswitch-switch"{print $2}' "$work/picked")
dir="$CACHE/ovs-debian13-$version"
if [ -x "$dir/bin/ovs-vswitchd" ]; then
	echo "$dir"
	exit 0
fi

echo "ensure-ovs-next: fetching Debian 13's Open vSwitch $version (first time only)" >&2
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp/root" "$dir.tmp/bin" "$dir.tmp/share"
while read -r p v f s; do
	fetch "$f" "$work/$p.deb"
	echo "$s  $work/$p.deb" | sha256sum -c --quiet - >&2
	dpkg-deb -x "$work/$p.deb" "$dir.tmp/root"
done < "$work/picked"
lib="$dir/root/usr/lib/x86_64-linux-gnu"
for cmd in ovsdb-tool ovsdb-server ovs-vswitchd ovs-vsctl ovs-ofctl ovs-appctl ovs-dpctl; do
	path=$(cd "$dir.tmp/root" && find usr -name "$cmd" -type f | head -1)
	[ -n "$path" ] || { echo "ensure-ovs-next: no $cmd in the packages" >&2; exit 1; }
	printf '#!/bin/sh\n# Debian 13'"'"'s %s, through its own loader (hack/ensure-ovs-next.sh).\nexec "%s/ld-linux-x86-64.so.2" --library-path "%s" "%s" "$@"\n' \
		"$cmd" "$lib" "$lib" "$dir/root/$path" > "$dir.tmp/bin/$cmd"
	chmod +x "$dir.tmp/bin/$cmd"
done
ln -s ../root/usr/share/openvswitch "$dir.tmp/share/openvswitch"
echo "$version" > "$dir.tmp/VERSION"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
"$dir/bin/ovs-vswitchd" --version | head -1 >&2
echo "$dir"
