package conformance

import (
	"net/netip"
	"testing"
)

// TestJudgeSource pins how an expected source is judged: a member's
// address, or for "node" the node's IP unless the answer names the
// address its harness's node SNATs to (Answer.NodeSource).
func TestJudgeSource(t *testing.T) {
	dst := netip.MustParseAddr("10.96.0.1")
	sourceVIP := netip.MustParseAddr("10.244.1.254")
	for _, tc := range []struct {
		name       string
		expect     string
		seen       string
		nodeSource netip.Addr
		ok         bool
	}{
		{"a member's address", "c", "10.244.1.7", netip.Addr{}, true},
		{"another member's address", "c", "10.244.1.5", netip.Addr{}, false},
		{"node: the node's IP", "node", "192.168.100.10", netip.Addr{}, true},
		{"node: the harness's SNAT address", "node", "10.244.1.254", sourceVIP, true},
		{"node: the node's IP where the harness SNATs to another", "node", "192.168.100.10", sourceVIP, false},
		{"a member is not the harness's SNAT address", "c", "10.244.1.254", sourceVIP, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Answer{Outcome: Answered, Identity: "p1:8080", Source: netip.MustParseAddr(tc.seen), NodeSource: tc.nodeSource}
			msg := judge(Expect{Reaches: []string{"p1"}, Source: tc.expect}, dst, []Answer{a})
			if (msg == "") != tc.ok {
				t.Fatalf("judged %q; want ok=%v", msg, tc.ok)
			}
		})
	}
}
