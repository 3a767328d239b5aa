// Package openflow is Switchyard's small model of OpenFlow 1.5 flows and
// groups: typed match fields and actions that render both as the text
// ovs-ofctl accepts (for `switchyard render` and for tests) and as their
// OpenFlow encoding, written straight into the bytes the driver sends
// (wire.go; the tests hold it to libOpenflow's byte for byte). Every
// flow's cookie is a hash of its encoding, so a flow's cookie names its
// exact content: two flows with the same cookie are the same flow, which is
// how the driver reconciles with what OVS holds without decoding dumped
// actions.
package openflow
