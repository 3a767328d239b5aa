package ovstrace

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// Traces ovs-vswitchd 3.1 printed for the bridge of ovs's world test
// (TestOVSTraceMatchesTraffic's services), read whole: a pod to a
// ClusterIP (IPv4 and IPv6), the node to its own NodePort with a remote
// endpoint (DNAT, then SNAT towards the host), a reject and a drop.
func TestParse(t *testing.T) {
	ap := netip.MustParseAddrPort
	lb := func(inPort, ip, match, did string) []dataplanes.TraceStep {
		return []dataplanes.TraceStep{{Table: "Classifier", Match: inPort}, {Table: "Neighbor", Match: ip}, {Table: "UnSNAT"},
			{Table: "ConntrackZone", Match: ip}, {Table: "ConntrackState", Match: "ct_state=-inv+trk"}, {Table: "SessionAffinity"},
			{Table: "ServiceLB", Match: match, Did: did}}
	}
	toPod := func(match, did string) []dataplanes.TraceStep {
		return []dataplanes.TraceStep{{Table: "L3Forwarding", Match: match}, {Table: "ServiceSNAT"}, {Table: "ConntrackCommit"}, {Table: "Output", Did: did}}
	}
	node := []dataplanes.TraceStep{{Table: "Classifier", Match: "ip,in_port=1,nw_src=192.168.100.10"}, {Table: "Neighbor", Match: "ip"}, {Table: "UnSNAT"},
		{Table: "ConntrackZone", Match: "ip"}, {Table: "ConntrackState", Match: "ct_state=-inv+trk"}, {Table: "SessionAffinity"},
		{Table: "ServiceLB", Match: "tcp,reg4=0x10000/0x70000,nw_dst=169.254.255.252,tp_dst=30080", Did: "select group 2649696164; bucket 1236826532; DNAT to 10.244.2.10:8080"},
		{Table: "L3Forwarding", Match: "ip"}, {Table: "ServiceSNAT", Match: "ip,reg0=0xb0/0xf0", Did: "SNAT to 169.254.255.253"}, {Table: "Output", Match: "reg1=0x1,in_port=1", Did: "back out its ingress port"}}
	for _, tc := range []struct {
		file string
		want Walk
	}{
		{"pod-clusterip.txt", Walk{Verdict: Output, Endpoint: ap("10.244.1.6:8080"), Steps: append(
			lb("in_port=2", "ip", "tcp,reg4=0x10000/0x70000,nw_dst=10.96.0.10,tp_dst=80", "select group 2649696164; bucket 1236592587; DNAT to 10.244.1.6:8080"),
			toPod("ip,nw_dst=10.244.1.6", "out port 3")...)}},
		{"pod-clusterip6.txt", Walk{Verdict: Output, Endpoint: ap("[fd00:244:1::5]:8080"), Steps: append(
			lb("in_port=4", "ipv6", "tcp6,reg4=0x10000/0x70000,ipv6_dst=fd00:96::60,tp_dst=80", "select group 3451889394; bucket 2142144460; DNAT to [fd00:244:1::5]:8080"),
			toPod("ipv6,ipv6_dst=fd00:244:1::5", "out port 2")...)}},
		{"node-nodeport.txt", Walk{Verdict: Output, Endpoint: ap("10.244.2.10:8080"), SNAT: netip.MustParseAddr("169.254.255.253"), Steps: node}},
		{"reject.txt", Walk{Verdict: Reject, Steps: lb("in_port=4", "ip", "tcp,reg4=0x10000/0x70000,nw_dst=10.96.0.30,tp_dst=80", "to the controller")}},
		{"drop.txt", Walk{Verdict: Drop, Steps: lb("in_port=4", "ip", "tcp,reg4=0x10000/0x70000,nw_dst=10.96.0.31,tp_dst=80", "drop")}},
	} {
		out, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(string(out))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }), cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.file, d)
		}
	}
	if _, err := Parse("ovs-vswitchd: Bad openflow flow syntax"); err == nil {
		t.Error("an error message parsed as a trace")
	}
}
