//go:build linux

package hostnet

import (
	"context"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"sigs.k8s.io/knftables"
)

// The audit leaves the table unwritten only while it holds what was last
// written, every set and chain of it is there, and the last rewrite is
// under TableRewritePeriod old; drift inside a set waits for that rewrite.
func TestAuditRewritesTheTableOnlyWhenItMayDiffer(t *testing.T) {
	nodePorts := []ProtoPort{{"tcp", 30080}, {"udp", 30053}}
	captures := []Capture{{netip.MustParseAddr("192.0.2.53"), "tcp", 80}}
	other := dualStack()
	other.NodeIPs = other.NodeIPs[:1]
	cases := []struct {
		name      string
		after     time.Duration    // since the rewrite
		drift     knftables.Object // deleted from the table after the rewrite
		c         Config
		nodePorts []ProtoPort
		captures  []Capture
		holds     bool
	}{
		{name: "as written", c: dualStack(), nodePorts: nodePorts, captures: captures, holds: true},
		{name: "the same NodePorts in another order", c: dualStack(), nodePorts: []ProtoPort{nodePorts[1], nodePorts[0]}, captures: captures, holds: true},
		{name: "just under the period", after: TableRewritePeriod - time.Second, c: dualStack(), nodePorts: nodePorts, captures: captures, holds: true},
		{name: "an element lost: waits for the rewrite", drift: nodePortElement(nodePorts[0]),
			c: dualStack(), nodePorts: nodePorts, captures: captures, holds: true},
		{name: "the period is up", after: TableRewritePeriod, c: dualStack(), nodePorts: nodePorts, captures: captures},
		{name: "another NodePort", c: dualStack(), nodePorts: nodePorts[:1], captures: captures},
		{name: "another captured port", c: dualStack(), nodePorts: nodePorts},
		{name: "another configuration", c: other, nodePorts: nodePorts, captures: captures},
		{name: "a set gone", drift: &knftables.Set{Name: setNodePorts}, c: dualStack(), nodePorts: nodePorts, captures: captures},
		{name: "a chain gone", drift: &knftables.Chain{Name: chainCaptureOut}, c: dualStack(), nodePorts: nodePorts, captures: captures},
		{name: "the table gone", drift: &knftables.Table{}, c: dualStack(), nodePorts: nodePorts, captures: captures},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			fake := knftables.NewFake(knftables.InetFamily, TableName)
			now := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
			h := &Host{nft: fake, now: func() time.Time { return now }}
			if err := h.writeTable(ctx, dualStack(), nodePorts, captures); err != nil {
				t.Fatal(err)
			}
			if tc.drift != nil {
				tx := fake.NewTransaction()
				tx.Delete(tc.drift)
				if err := fake.Run(ctx, tx); err != nil {
					t.Fatalf("the drift: %v", err)
				}
			}
			now = now.Add(tc.after)
			if got := h.tableHolds(ctx, tc.c, tc.nodePorts, tc.captures); got != tc.holds {
				t.Errorf("tableHolds = %v, want %v", got, tc.holds)
			}
		})
	}
}

// Never written: the audit writes it.
func TestAuditWritesATableNeverWritten(t *testing.T) {
	h := &Host{nft: knftables.NewFake(knftables.InetFamily, TableName)}
	if h.tableHolds(context.Background(), dualStack(), nil, nil) {
		t.Error("a table never written holds what the audit wants")
	}
}

// On nft in a namespace of its own: the audit's listing of the table
// (over netlink) is the namespace's, not the process's, and finds the
// table a Host wrote there, 12 000 NodePorts in it; once the table is
// deleted behind the Host's back, the table no longer holds.
func TestAuditListsTheTableOfItsNamespace(t *testing.T) {
	h, err := Open(testNamespace(t, "audit"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	c := dualStack()
	var nodePorts []ProtoPort
	for i := range 12000 {
		nodePorts = append(nodePorts, ProtoPort{Proto: []string{"tcp", "udp", "sctp"}[i%3], Port: uint16(30000 + i/3)})
	}
	if err := h.writeTable(ctx, c, nodePorts, nil); err != nil {
		t.Fatal(err)
	}
	if !h.tableHolds(ctx, c, nodePorts, nil) {
		t.Fatal("the table just written does not hold")
	}
	if err := h.inNS(func() error { return exec.Command("nft", "delete", "table", "inet", TableName).Run() }); err != nil {
		t.Fatal(err)
	}
	if h.tableHolds(ctx, c, nodePorts, nil) {
		t.Error("a deleted table holds")
	}
}

// sameElements compares as multisets, and allocates nothing when both
// lists are in one order (as the model and an audit's copy give them).
func TestSameElements(t *testing.T) {
	a, b, c := ProtoPort{"tcp", 30080}, ProtoPort{"udp", 30053}, ProtoPort{"tcp", 30053}
	cases := []struct {
		name string
		x, y []ProtoPort
		same bool
	}{
		{"both empty", nil, []ProtoPort{}, true},
		{"one order", []ProtoPort{a, b, c}, []ProtoPort{a, b, c}, true},
		{"another order", []ProtoPort{a, b, c}, []ProtoPort{c, a, b}, true},
		{"one differs", []ProtoPort{a, b}, []ProtoPort{a, c}, false},
		{"a repeat instead of another", []ProtoPort{a, a, b}, []ProtoPort{a, b, b}, false},
		{"lengths differ", []ProtoPort{a}, []ProtoPort{a, a}, false},
	}
	for _, tc := range cases {
		if got := sameElements(tc.x, tc.y); got != tc.same {
			t.Errorf("%s: sameElements = %v, want %v", tc.name, got, tc.same)
		}
	}
	var many []ProtoPort
	for i := range 30000 {
		many = append(many, ProtoPort{Proto: []string{"tcp", "udp"}[i%2], Port: uint16(i)})
	}
	other := append([]ProtoPort(nil), many...)
	if allocs := testing.AllocsPerRun(10, func() { sameElements(many, other) }); allocs != 0 {
		t.Errorf("sameElements of two lists in one order allocated %v times, want 0", allocs)
	}
}
