// Package build turns one Service and its EndpointSlices into the graph's
// service ports for one node, following upstream kube-proxy's pkg/proxy
// semantics (see docs/semantics.md). It is pure: no I/O, no clocks, no
// globals. Whatever it refuses is returned as a Rejection, never a panic.
package build
