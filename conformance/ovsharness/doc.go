// Package ovsharness runs the conformance cases over the OVS driver on a
// real Open vSwitch (userspace datapath) with network namespaces: the
// world's pods are namespaces on the bridge, node-2's backends and the
// external clients sit behind the uplink's router, every backend runs a
// small TCP/UDP server answering with its identity, and probes are real
// connections. Linux only; it needs root and the OVS packages (make test
// installs them).
package ovsharness
