// Package hns is the Windows dataplane driver: it programs HNS (Host
// Networking Service) load balancers through hcsshim's hcn package, as
// upstream kube-proxy's winkernel proxier does, with the graph's
// semantics (terminating fallback and topology for every service type).
//
// Everything but the hcn calls is plain Go that runs on Linux: the
// interface over HNS (api.go), the mapping from the graph to HNS objects
// (mapping.go, mappingendpoints.go), the desired-versus-installed driver
// (driver.go, reconcile.go) and its ownership record (owned.go). The real HNS client
// lives in client_windows.go; tests use the simulator in hns/hnssim.
// docs/hns.md describes the mapping and where it differs from upstream.
package hns
