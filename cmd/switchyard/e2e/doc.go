// Package e2e runs switchyard end to end against a real kube-apiserver
// and etcd (built from the Go module proxy by hack/ensure-kube.sh and
// cached outside the repository), with the Helm chart rendered by a real
// helm (hack/ensure-helm.sh): the chart's objects are checked by the API
// server with server-side dry-runs, and the switchyard binary runs with
// the chart's config and a token bound to the chart's ClusterRole against
// a real Open vSwitch, probed with real connections. TestRealNode (make
// e2e-node) goes further: a real node — kube-controller-manager,
// kube-scheduler, containerd, runc and a kubelet beside the API server, in
// network namespaces — with the chart installed, upgraded and uninstalled
// by helm and no kube-proxy. Everything a test starts it stops by PID,
// also when it fails. Linux only; make e2e and make e2e-node run it (part
// of make test).
package e2e
