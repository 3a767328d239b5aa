package explain

import (
	"net/netip"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// Every rule of upstream's masquerade decision, by frontend kind, policy
// and where the connection starts.
func TestMasqueradeRules(t *testing.T) {
	node := graph.Node{Name: "node-1", IPs: []netip.Addr{netip.MustParseAddr("192.168.1.10"), netip.MustParseAddr("fd00::10")},
		PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:244:1::/64")}}
	const pod, pod6, self, outside, remotePod = "10.244.1.9", "fd00:244:1::9", "192.168.1.10", "198.51.100.7", "10.244.2.9"
	for _, tc := range []struct {
		kind   graph.FrontendKind
		policy graph.TrafficPolicy
		src    string
		want   MasqueradeWhy
	}{
		{graph.FrontendClusterIP, graph.PolicyCluster, pod, FromAPod},
		{graph.FrontendClusterIP, graph.PolicyCluster, pod6, FromAPod},
		{graph.FrontendClusterIP, graph.PolicyLocal, pod, FromAPod},
		{graph.FrontendClusterIP, graph.PolicyCluster, self, NotFromAPod},
		{graph.FrontendClusterIP, graph.PolicyCluster, outside, NotFromAPod},
		{graph.FrontendClusterIP, graph.PolicyCluster, remotePod, NotFromAPod},
		{graph.FrontendNodePort, graph.PolicyCluster, pod, ExternalPolicyCluster},
		{graph.FrontendNodePort, graph.PolicyCluster, outside, ExternalPolicyCluster},
		{graph.FrontendLoadBalancer, graph.PolicyCluster, self, ExternalPolicyCluster},
		{graph.FrontendNodePort, graph.PolicyLocal, outside, ExternalPolicyLocal},
		{graph.FrontendExternalIP, graph.PolicyLocal, remotePod, ExternalPolicyLocal},
		{graph.FrontendLoadBalancer, graph.PolicyLocal, pod, ShortCircuitFromAPod},
		{graph.FrontendNodePort, graph.PolicyLocal, self, ShortCircuitFromTheNode},
	} {
		sp := &graph.ServicePort{ExternalTrafficPolicy: tc.policy}
		c := graph.Connection{Src: netip.MustParseAddr(tc.src)}
		got := masquerade(sp, tc.kind, c, node)
		if got != tc.want {
			t.Errorf("%s %s from %s: %s, want %s", tc.kind, tc.policy, tc.src, got, tc.want)
		}
	}
}
