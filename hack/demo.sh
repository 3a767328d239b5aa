#!/usr/bin/env bash
# make demo: run examples/cluster.yaml through the core and through every
# driver built into bin/switchyard, plus the third-party example driver.
# Needs no cluster and changes nothing on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
sy=bin/switchyard
cluster=examples/cluster.yaml
node=node-1

section() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

section "The service graph for $node (switchyard graph)"
"$sy" graph --file "$cluster" --node-name "$node"

section "Where a pod's connection goes, and why (switchyard explain)"
"$sy" explain --file "$cluster" --node-name "$node" --from 10.244.1.9 --to 10.96.20.6:9090 --dataplane hns

section "Drivers built into this binary (switchyard drivers)"
"$sy" drivers

for d in $("$sy" drivers --names); do
  section "What the $d driver would program (switchyard render --dataplane $d)"
  "$sy" render --file "$cluster" --node-name "$node" --dataplane "$d"
done

section "A third-party driver from its own Go module (examples/file-export)"
(cd examples/file-export && go build -o ../../bin/switchyard-file-export .)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bin/switchyard-file-export run --dataplane file-export --file "$cluster" --node-name "$node" \
  --once --file-export-path "$out/graph.json" 2>/dev/null
echo "wrote $(wc -c <"$out/graph.json") bytes for $(grep -c '"service":' "$out/graph.json") service ports; the first one:"
python3 - "$out/graph.json" <<'PY' 2>/dev/null || head -40 "$out/graph.json"
import json, sys
g = json.load(open(sys.argv[1]))
print(json.dumps(g["servicePorts"][0], indent=2))
PY
