//go:build linux

package hostnet

import (
	"context"
	"net/netip"
	"testing"

	"sigs.k8s.io/knftables"
)

// A change's transaction leaves the table exactly as a rewrite for the
// new NodePorts and captures would, with an operation for each element
// that came or went and none for the rest, also when the set lost an
// element that went before the change (drift: destroyed, no error).
func TestChangesTouchOnlyWhatChanged(t *testing.T) {
	ports := func(n int) []ProtoPort {
		out := make([]ProtoPort, n)
		for i := range out {
			out[i] = ProtoPort{"tcp", uint16(20000 + i)}
		}
		return out
	}
	v4, v6 := netip.MustParseAddr("192.0.2.53"), netip.MustParseAddr("2001:db8::53")
	many := ports(2000) // the fake looks elements up one by one: 10 000 take it ~40 s
	cases := []struct {
		name           string
		fromNP, toNP   []ProtoPort
		fromCap, toCap []Capture
		lost           []ProtoPort // gone from the set before the change
		ops            int
	}{
		{name: "nothing changed", fromNP: ports(3), toNP: ports(3), ops: 0},
		{name: "a NodePort came", fromNP: ports(2), toNP: ports(3), ops: 1},
		{name: "a NodePort went", fromNP: ports(3), toNP: ports(2), ops: 1},
		{name: "one came and one went among 2 000", fromNP: many, toNP: append(many[1:len(many):len(many)], ProtoPort{"udp", 53}), ops: 2},
		{name: "the last went", fromNP: ports(1), toNP: nil, ops: 1},
		{name: "a NodePort that went had been lost", fromNP: ports(3), toNP: ports(1), lost: []ProtoPort{{"tcp", 20002}}, ops: 2},
		{name: "captures of both families came and went",
			fromCap: []Capture{{v4, "tcp", 80}, {v6, "udp", 53}}, toCap: []Capture{{v4, "tcp", 443}, {v6, "udp", 53}}, ops: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			fake := knftables.NewFake(knftables.InetFamily, TableName)
			run(t, fake, dualStack(), tc.fromNP, tc.fromCap)
			if len(tc.lost) > 0 {
				tx := fake.NewTransaction()
				for _, p := range tc.lost {
					tx.Delete(nodePortElement(p))
				}
				if err := fake.Run(ctx, tx); err != nil {
					t.Fatal(err)
				}
			}
			tx := fake.NewTransaction()
			nodePortsDeltaTx(tx, tc.fromNP, tc.toNP)
			capturesDeltaTx(tx, tc.fromCap, tc.toCap)
			if got := tx.NumOperations(); got != tc.ops {
				t.Errorf("%d operations, want %d", got, tc.ops)
			}
			if err := fake.Run(ctx, tx); err != nil {
				t.Fatalf("the change's transaction: %v", err)
			}
			want := run(t, knftables.NewFake(knftables.InetFamily, TableName), dualStack(), tc.toNP, tc.toCap)
			diffDump(t, want, fake.Dump())
		})
	}
}
