#!/usr/bin/env bash
# Builds and installs what `make e2e-node` needs for a real node, once:
#  - Debian's containerd 1.6, runc and CNI plugins (apt, as root) — only the
#    binaries are used: the test starts its own containerd with its own root,
#    state and socket, never the system service;
#  - kubelet, kube-controller-manager and kube-scheduler v1.36 (the API
#    server's version), built from the Go module proxy like
#    hack/ensure-kube.sh builds kube-apiserver (a scratch module requiring
#    k8s.io/kubernetes, staging modules replaced by their releases), into
#    ~/.cache/switchyard. One Kubernetes tree for all three: the kubelet
#    v1.36 still falls back to its own cgroupDriver when containerd 1.6
#    answers RuntimeConfig with Unimplemented (it counts that in
#    kubelet_cri_losing_support, "1.37.0"), so v1.36 is the last kubelet
#    that runs on Debian 12's containerd.
# Prints the directory holding kubelet, kube-controller-manager and
# kube-scheduler.
#
# `hack/ensure-node.sh kube-proxy` builds upstream kube-proxy from the same
# tree into the same directory instead (nothing installed with apt): the
# benchmark that runs it beside switchyard (make bench) calls it so.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.36.4}
CACHE=${SWITCHYARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}
out="$CACHE/node-$K8S_VERSION"
GO=${GO:-go}

bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(kube-controller-manager kube-scheduler kubelet)
node_set=0
[ $# -gt 0 ] || node_set=1

need=(containerd containerd-shim-runc-v2 ctr runc /usr/lib/cni/loopback)
missing=()
for b in "${need[@]}"; do command -v "$b" >/dev/null 2>&1 || [ -x "$b" ] || missing+=("$b"); done
if [ $node_set -eq 1 ] && [ ${#missing[@]} -gt 0 ]; then
	echo "ensure-node: installing containerd, runc and the CNI plugins (missing: ${missing[*]})" >&2
	if [ "$(id -u)" -ne 0 ]; then
		echo "ensure-node: need root to install packages" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	# --no-install-recommends and no service start: the machine's own
	# containerd is never started (policy-rc.d refuses every start).
	policy=/usr/sbin/policy-rc.d
	had_policy=0
	[ -e "$policy" ] && had_policy=1
	[ $had_policy -eq 1 ] || { printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; }
	apt-get install -y -qq --no-install-recommends containerd runc containernetworking-plugins >&2
	[ $had_policy -eq 1 ] || rm -f "$policy"
fi

build() { # build VERSION PACKAGE NAME
	local version=$1 pkg=$2 name=$3 minor staging mod dir
	if [ -x "$out/$name" ]; then
		return
	fi
	echo "building $name $version (first time only)..." >&2
	dir="$work/$version"
	if [ ! -f "$dir/go.mod" ]; then
		mkdir -p "$dir"
		(
			cd "$dir"
			$GO mod init switchyard.local/kube-build >/dev/null 2>&1
			mod=$($GO mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
			minor=${version#v1.}
			staging="v0.$minor"
			$GO mod edit -require "k8s.io/kubernetes@$version"
			for m in $(awk '$1 ~ /^k8s.io\// && $2 == "v0.0.0" {print $1}' "$mod"); do
				$GO mod edit -replace "$m=$m@$staging"
			done
			printf 'package main\n\nimport (\n' >main.go
			for p in kubelet kube-controller-manager kube-scheduler kube-proxy; do
				printf '\t_ "k8s.io/kubernetes/cmd/%s/app"\n' "$p" >>main.go
			done
			printf ')\n\nfunc main() {}\n' >>main.go
			$GO mod tidy >&2
		)
	fi
	minor=${version#v1.}
	(cd "$dir" && $GO build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor%%.*}" \
		-o "$out/$name.tmp" "$pkg")
	mv "$out/$name.tmp" "$out/$name"
}

absent=()
for b in "${bins[@]}"; do [ -x "$out/$b" ] || absent+=("$b"); done
if [ ${#absent[@]} -gt 0 ]; then
	mkdir -p "$out"
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	export GOFLAGS=-mod=mod CGO_ENABLED=0 GOWORK=off
	for b in "${absent[@]}"; do
		build "$K8S_VERSION" "k8s.io/kubernetes/cmd/$b" "$b"
	done
fi
echo "$out"
