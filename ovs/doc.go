// Package ovs is the Open vSwitch dataplane: a driver (dataplanes.Driver)
// that programs one OVS bridge, which is also the node's pod network, and
// the host's side of it.
//
// This package is the reconciler: Sync and Apply under one lock, the
// bridge's OpenFlow I/O (bridgeflows.go: read back, adopt, one bundle per
// round, refusals held back by owner), the periodic audit that reads the
// bridge and syncs the host off the change path (audit.go), the host
// (driverhost.go), the
// OVSDB port watch that asks the runner for a round (driverports.go), the
// reports and metrics, and the factory, install and cleanup. What it
// wants is ovs/engine's (pure); how it is said is ovs/pipeline's (the
// tables as data); it speaks over ovs/ofconn, ovs/ovsdb, ovs/hostnet and
// ovs/vswitchd, each a narrow interface (seams.go) with an in-memory
// implementation for tests. docs/ovs.md describes the pipeline.
package ovs
