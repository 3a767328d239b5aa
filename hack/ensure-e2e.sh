#!/usr/bin/env bash
# Builds what `make e2e-upstream` needs, once, into ~/.cache/switchyard:
#  - upstream's e2e.test, agnhost and kubectl from k8s.io/kubernetes (the
#    scratch-module trick of hack/ensure-kube.sh: staging modules replaced
#    by their releases), and the ginkgo CLI of the version kubernetes
#    requires, which runs e2e.test's specs in parallel processes;
#  - CoreDNS from github.com/coredns/coredns, a main of our own
#    (hack/coredns/main.go) that links only the plugins a cluster DNS needs;
#  - Debian's nginx binary (downloaded and unpacked, not installed: no
#    service), for the specs that run upstream's nginx image;
#  - Debian's tools the agnhost image carries (upstream's image is Alpine
#    with bind-tools, curl, netcat-openbsd, iproute2, bash) and busybox for
#    the busybox image: installed with apt (as root) when missing; the
#    images take them, with their libraries, from this machine.
# Cold: ~15 min on 2 cores. Prints the directory holding the binaries.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.36.4}
COREDNS_VERSION=${COREDNS_VERSION:-v1.14.2}
CACHE=${SWITCHYARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}
out="$CACHE/e2e-$K8S_VERSION-coredns-$COREDNS_VERSION"
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)

need=(nc nslookup dig curl wget bash dash ip busybox)
missing=()
for b in "${need[@]}"; do command -v "$b" >/dev/null 2>&1 || missing+=("$b"); done
if ! nc -h 2>&1 | grep -q OpenBSD; then missing+=(netcat-openbsd); fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "ensure-e2e: installing the agnhost image's tools (missing: ${missing[*]})" >&2
	if [ "$(id -u)" -ne 0 ]; then
		echo "ensure-e2e: need root to install packages" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends netcat-openbsd bind9-dnsutils curl wget bash dash iproute2 busybox-static >&2
fi

if [ -x "$out/e2e.test" ] && [ -x "$out/agnhost" ] && [ -x "$out/kubectl" ] && [ -x "$out/coredns" ] && [ -x "$out/nginx" ] && [ -x "$out/ginkgo" ] && [ -f "$out/porter/localhost.key" ]; then
	echo "$out"
	exit 0
fi
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOWORK=off

minor=${K8S_VERSION#v1.}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor%%.*}"
if [ ! -x "$out/e2e.test" ] || [ ! -x "$out/agnhost" ] || [ ! -x "$out/kubectl" ]; then
	echo "building e2e.test, agnhost and kubectl $K8S_VERSION (first time only, ~12 min)..." >&2
	mkdir -p "$work/k8s" && cd "$work/k8s"
	$GO mod init switchyard.local/e2e-build >/dev/null 2>&1
	mod=$($GO mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
	$GO mod edit -require "k8s.io/kubernetes@$K8S_VERSION"
	for m in $(awk '$1 ~ /^k8s.io\// && $2 == "v0.0.0" {print $1}' "$mod"); do
		$GO mod edit -replace "$m=$m@v0.$minor"
	done
	printf 'package main\n\nimport (\n\t_ "k8s.io/kubernetes/test/e2e"\n\t_ "k8s.io/kubernetes/test/images/agnhost"\n\t_ "k8s.io/kubernetes/cmd/kubectl"\n)\n\nfunc main() {}\n' >main.go
	$GO mod tidy >&2 || true
	[ -x "$out/agnhost" ] || $GO build -trimpath -ldflags "$ldflags" -o "$out/agnhost.tmp" k8s.io/kubernetes/test/images/agnhost
	[ -x "$out/kubectl" ] || $GO build -trimpath -ldflags "$ldflags" -o "$out/kubectl.tmp" k8s.io/kubernetes/cmd/kubectl
	[ -x "$out/e2e.test" ] || $GO test -c -trimpath -ldflags "$ldflags" -o "$out/e2e.test.tmp" k8s.io/kubernetes/test/e2e
	for b in agnhost kubectl e2e.test; do
		if [ -f "$out/$b.tmp" ]; then mv "$out/$b.tmp" "$out/$b"; fi
	done
fi

if [ ! -x "$out/coredns" ]; then
	echo "building coredns $COREDNS_VERSION (first time only, ~3 min)..." >&2
	mkdir -p "$work/coredns" && cd "$work/coredns"
	$GO mod init switchyard.local/coredns-build >/dev/null 2>&1
	cp "$here/coredns/main.go" main.go
	$GO mod edit -require "github.com/coredns/coredns@$COREDNS_VERSION"
	$GO mod tidy >&2
	$GO build -trimpath -ldflags "-s -w" -o "$out/coredns.tmp" .
	mv "$out/coredns.tmp" "$out/coredns"
fi
if [ ! -f "$out/porter/localhost.key" ]; then
	# agnhost porter's TLS certificate and key, which upstream's image has
	# in its root directory.
	src=$($GO mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
	mkdir -p "$out/porter"
	cp "$src/test/images/agnhost/porter/localhost.crt" "$src/test/images/agnhost/porter/localhost.key" "$out/porter/"
	chmod 0644 "$out/porter/"*
fi
if [ ! -x "$out/ginkgo" ]; then
	ginkgo=$($GO mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p' | xargs awk '$1 == "github.com/onsi/ginkgo/v2" {print $2}')
	GOBIN="$work/gobin" $GO install "github.com/onsi/ginkgo/v2/ginkgo@$ginkgo"
	mv "$work/gobin/ginkgo" "$out/ginkgo"
fi
if [ ! -x "$out/nginx" ]; then
	(cd "$work" && apt-get download nginx >&2 2>/dev/null || { apt-get update -qq >&2 && apt-get download nginx >&2; })
	dpkg-deb -x "$work"/nginx_*.deb "$work/nginx-root"
	cp "$work/nginx-root/usr/sbin/nginx" "$out/nginx"
fi
echo "$out"
