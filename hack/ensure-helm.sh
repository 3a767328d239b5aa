#!/usr/bin/env bash
# Builds the helm binary from the Go module proxy into a cache outside the
# repository (once per version; ~8 min cold on 2 cores) and prints its
# path. Helm is not packaged by Debian; the chart tests render with it.
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.19.2}
CACHE=${SWITCHYARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}
# helm's default Kubernetes version for `helm template` comes from ldflags
# (its own Makefile sets them; without them it is v1.20).
K8S_MINOR=${HELM_K8S_MINOR:-34}
bin="$CACHE/helm-$HELM_VERSION-k1.$K8S_MINOR/helm"
GO=${GO:-go}

if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi
echo "building helm $HELM_VERSION (first time only, ~8 min)..." >&2
mkdir -p "$(dirname "$bin")"
CGO_ENABLED=0 GOFLAGS= GOWORK=off GOBIN="$(dirname "$bin")" \
	$GO install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$K8S_MINOR" \
	"helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
echo "$bin"
