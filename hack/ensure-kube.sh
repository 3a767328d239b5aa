#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the Go module proxy into a cache
# outside the repository (once per version; later runs only print the
# directory). kube-apiserver cannot be `go install`ed (kubernetes' go.mod
# pins its staging modules at v0.0.0), so a scratch module requires
# k8s.io/kubernetes and replaces each k8s.io/* v0.0.0 requirement with the
# matching v0.x release. Cold: ~12 min for kube-apiserver, ~3 min for etcd
# on 2 cores. Prints the directory holding both binaries.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.36.4}
ETCD_VERSION=${ETCD_VERSION:-v3.6.4}
CACHE=${SWITCHYARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}
out="$CACHE/kube-$K8S_VERSION-etcd-$ETCD_VERSION"
GO=${GO:-go}

if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ]; then
	echo "$out"
	exit 0
fi
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOWORK=off

if [ ! -x "$out/kube-apiserver" ]; then
	echo "building kube-apiserver $K8S_VERSION (first time only, ~12 min)..." >&2
	mkdir -p "$work/k8s" && cd "$work/k8s"
	$GO mod init switchyard.local/kube-build >/dev/null 2>&1
	mod=$($GO mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
	minor=${K8S_VERSION#v1.}
	staging="v0.$minor"
	$GO mod edit -require "k8s.io/kubernetes@$K8S_VERSION"
	for m in $(awk '$1 ~ /^k8s.io\// && $2 == "v0.0.0" {print $1}' "$mod"); do
		$GO mod edit -replace "$m=$m@$staging"
	done
	cat > main.go <<'GO'
package main

import _ "k8s.io/kubernetes/cmd/kube-apiserver/app"

func main() {}
GO
	$GO mod tidy >&2
	$GO build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor%%.*}" \
		-o "$out/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
	mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
fi

if [ ! -x "$out/etcd" ]; then
	echo "building etcd $ETCD_VERSION (first time only, ~3 min)..." >&2
	mkdir -p "$work/etcd" && cd "$work/etcd"
	$GO mod init switchyard.local/etcd-build >/dev/null 2>&1
	cat > main.go <<'GO'
package main

import _ "go.etcd.io/etcd/server/v3/etcdmain"

func main() {}
GO
	$GO get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
	$GO mod tidy >&2
	$GO build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3
	mv "$out/etcd.tmp" "$out/etcd"
fi
echo "$out"
