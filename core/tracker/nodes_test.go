package tracker

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	v1 "k8s.io/api/core/v1"
)

func TestNodeViewPodCIDRs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		podCIDR  string
		podCIDRs []string
		want     string
		rejected []build.Reason
	}{
		{name: "dual-stack", podCIDRs: []string{"10.244.1.0/24", "fd00:244:1::/64"}, want: "10.244.1.0/24 fd00:244:1::/64"},
		{name: "IPv6 first keeps the Node's order", podCIDRs: []string{"fd00:244:1::/64", "10.244.1.0/24"}, want: "fd00:244:1::/64 10.244.1.0/24"},
		{name: "only the old single field", podCIDR: "10.244.3.0/24", want: "10.244.3.0/24"},
		{name: "none (no IPAM yet)", want: ""},
		{name: "host bits are cleared", podCIDRs: []string{"10.244.1.7/24"}, want: "10.244.1.0/24"},
		{name: "IPv4-mapped becomes IPv4", podCIDRs: []string{"::ffff:10.244.1.0/120"}, want: "10.244.1.0/24"},
		{name: "garbage is refused, the rest kept", podCIDRs: []string{"10.244.1.0/33", "fd00:244:1::/64"}, want: "fd00:244:1::/64",
			rejected: []build.Reason{build.ReasonInvalidCIDR}},
		{name: "a second of a family is refused", podCIDRs: []string{"10.244.1.0/24", "10.244.9.0/24"}, want: "10.244.1.0/24",
			rejected: []build.Reason{build.ReasonDuplicateFamily}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := Node("node-1", "", "192.0.2.1")
			n.Spec.PodCIDR, n.Spec.PodCIDRs = tc.podCIDR, tc.podCIDRs
			view, rejs := NodeView(n)
			if got := prefixes(view.PodCIDRs); got != tc.want {
				t.Errorf("pod CIDRs = %q, want %q", got, tc.want)
			}
			var reasons []build.Reason
			for _, r := range rejs {
				reasons = append(reasons, r.Reason)
				if r.Object.Kind != "Node" || !strings.HasPrefix(r.Field, "spec.podCIDRs[") {
					t.Errorf("rejection %v does not point at the pod CIDR", r)
				}
			}
			if fmt.Sprint(reasons) != fmt.Sprint(tc.rejected) {
				t.Errorf("rejections %v, want %v", reasons, tc.rejected)
			}
		})
	}
}

func prefixes(ps []netip.Prefix) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, " ")
}

// describePeers renders a delta's peer part: "+name(cidrs)" and "-name".
func describePeers(d graph.Delta) string {
	var s []string
	for _, p := range d.Peers {
		s = append(s, "+"+p.Name+"("+prefixes(p.PodCIDRs)+")")
	}
	for _, n := range d.RemovedPeers {
		s = append(s, "-"+n)
	}
	return strings.Join(s, " ")
}

func node(name, ip string, cidrs ...string) *v1.Node {
	return WithPodCIDRs(Node(name, "", ip), cidrs...)
}

func TestPeersAreKeptOnlyWhenAsked(t *testing.T) {
	tr, _ := newTracker(t)
	tr.UpsertNode(node("node-2", "192.0.2.2", "10.244.2.0/24"))
	if tr.HasPending() {
		t.Fatal("without Options.Peers another node made the tracker pending")
	}
	if s := tr.Snapshot(); len(s.Peers) != 0 {
		t.Fatalf("peers without Options.Peers: %v", s.Peers)
	}
}

func TestPeerDeltas(t *testing.T) {
	rec := &recorder{}
	tr := New(Options{NodeName: "node-1", Observer: rec, Peers: true})
	tr.UpsertNode(node("node-1", "192.0.2.1", "10.244.1.0/24"))
	tr.UpsertNode(node("node-3", "192.0.2.3", "10.244.3.0/24"))
	tr.UpsertNode(node("node-2", "192.0.2.2", "10.244.2.0/24"))
	b := tr.Next(true)
	if got := describePeers(b.Delta); got != "+node-2(10.244.2.0/24) +node-3(10.244.3.0/24)" {
		t.Fatalf("first delta peers = %q", got)
	}
	if b.Delta.Node == nil || prefixes(b.Delta.Node.PodCIDRs) != "10.244.1.0/24" {
		t.Fatalf("own node = %+v", b.Delta.Node)
	}
	if len(b.Snapshot.Peers) != 2 || b.Snapshot.Peers[0].Name != "node-2" || b.Snapshot.Peers[1].Name != "node-3" {
		t.Fatalf("snapshot peers = %+v", b.Snapshot.Peers)
	}
	tr.Commit(b)
	if tr.HasPending() {
		t.Fatal("pending after commit")
	}

	// A status update that changes nothing the graph holds is no change.
	same := node("node-2", "192.0.2.2", "10.244.2.0/24")
	same.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	tr.UpsertNode(same)
	if got := describePeers(tr.Next(false).Delta); got != "" {
		t.Fatalf("irrelevant update gave %q", got)
	}

	// A pod CIDR assigned later, a node removed, a change reverted before
	// it was taken.
	tr.UpsertNode(node("node-2", "192.0.2.2", "10.244.2.0/24", "fd00:244:2::/64"))
	tr.DeleteNode("node-3")
	tr.UpsertNode(node("node-4", "192.0.2.4"))
	tr.DeleteNode("node-4")
	b = tr.Next(false)
	if got := describePeers(b.Delta); got != "+node-2(10.244.2.0/24 fd00:244:2::/64) -node-3" {
		t.Fatalf("delta peers = %q", got)
	}

	// Not committed: the same changes come again, merged with newer ones.
	tr.UpsertNode(node("node-5", "192.0.2.5", "10.244.5.0/24"))
	b = tr.Next(false)
	if got := describePeers(b.Delta); got != "+node-2(10.244.2.0/24 fd00:244:2::/64) +node-5(10.244.5.0/24) -node-3" {
		t.Fatalf("retried delta peers = %q", got)
	}
	// A change while the batch is out stays pending after its commit.
	tr.UpsertNode(node("node-5", "192.0.2.55", "10.244.5.0/24"))
	tr.Commit(b)
	if got := describePeers(tr.Next(false).Delta); got != "+node-5(10.244.5.0/24)" {
		t.Fatalf("after commit = %q", got)
	}
	if got := tr.Snapshot().Peers; len(got) != 2 || got[1].IPs[0].String() != "192.0.2.55" {
		t.Fatalf("snapshot peers = %+v", got)
	}
}

func TestNodeRejectionsReportedOnce(t *testing.T) {
	rec := &recorder{}
	tr := New(Options{NodeName: "node-1", Observer: rec, Peers: true})
	bad := node("node-2", "192.0.2.2", "10.244.2.0/99")
	tr.UpsertNode(bad)
	tr.UpsertNode(bad)
	if len(rec.rejected) != 1 || rec.rejected[0].Object.Name != "node-2" {
		t.Fatalf("rejections = %v, want one for node-2", rec.rejected)
	}
	tr.UpsertNode(node("node-2", "192.0.2.2", "10.244.2.0/24"))
	tr.UpsertNode(bad)
	if len(rec.rejected) != 2 {
		t.Fatalf("a fixed then broken again node: %d rejections, want 2", len(rec.rejected))
	}
}
