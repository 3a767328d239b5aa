// Package ovsharness runs the conformance cases over the OVS dataplane as
// a user runs it, on namespaces only: two nodes, each a network namespace
// with its own private Open vSwitch (userspace datapath) and its own
// `switchyard run` process reading the cluster from a file; the world's
// pods attached by the real switchyard-cni binary; an external client
// behind a router. Every backend (and the external client, and node-1
// itself) runs small TCP/UDP servers answering with their identity and
// the source they saw; probes are real connections. The world is built in
// routed mode (--ovs-encap=none: host routes between the nodes) or in
// overlay mode (VXLAN). Linux only; it needs root and the OVS packages
// (make test installs them).
package ovsharness
