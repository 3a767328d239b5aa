package engine

import (
	"net/netip"
	"testing"

	"github.com/switchyard-proxy/switchyard/ovs/hostnet"
)

// ReservedSide empties and reuses a spare side's arrays that have the
// room, and makes new ones for those that have not.
func TestReservedSideReusesTheSparesRoom(t *testing.T) {
	n := HostSizes{Frontends: 100, Captures: 10, NodePorts: 1000}
	big := ReservedSide(n, HostSide{})
	big.Frontends = append(big.Frontends, netip.MustParseAddr("10.96.0.1"))
	big.NodePorts = append(big.NodePorts, hostnet.ProtoPort{Proto: "tcp", Port: 30080})
	small := HostSide{Captures: make([]hostnet.Capture, 1, 2)}
	spare := HostSide{Frontends: big.Frontends, Captures: small.Captures, NodePorts: big.NodePorts}

	got := ReservedSide(n, spare)
	if len(got.Frontends) != 0 || len(got.Captures) != 0 || len(got.NodePorts) != 0 {
		t.Fatalf("not empty: %d frontends, %d captures, %d NodePorts", len(got.Frontends), len(got.Captures), len(got.NodePorts))
	}
	if &got.Frontends[:1][0] != &spare.Frontends[0] || &got.NodePorts[:1][0] != &spare.NodePorts[0] {
		t.Error("a spare array with the room was not reused")
	}
	if cap(got.Captures) < roomFor(n.Captures) {
		t.Errorf("captures: room for %d, want %d (the spare's was too small)", cap(got.Captures), roomFor(n.Captures))
	}
	if grown := ReservedSide(HostSizes{Frontends: 10 * cap(big.Frontends)}, spare); cap(grown.Frontends) < roomFor(10*cap(big.Frontends)) {
		t.Errorf("frontends: room for %d after the side grew, want %d", cap(grown.Frontends), roomFor(10*cap(big.Frontends)))
	}
}
