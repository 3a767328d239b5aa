package engine

import (
	"fmt"
	"net/netip"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/core/graph"
)

// A frontend IP gets a later-fragment flow while it has exactly one UDP
// service port: a second port on it takes the flow away, removing one
// brings it back; TCP ports do not count.
func TestUDPFragmentOwners(t *testing.T) {
	m := testModel(t)
	port := func(name string, proto graph.Protocol, n uint16, ips ...string) *graph.ServicePort {
		sp := &graph.ServicePort{Name: graph.ServicePortName{Namespace: "ns", Name: "dns", Port: name, Protocol: proto}, Port: n}
		for _, ip := range ips {
			sp.ClusterIPs = append(sp.ClusterIPs, netip.MustParseAddr(ip))
		}
		return sp
	}
	owners := func() []string {
		var out []string
		for _, ip := range []string{"10.96.0.10", "fd00:96::10", "203.0.113.9"} {
			if o := m.st.owners[FragmentsOwner(netip.MustParseAddr(ip))]; o != nil {
				out = append(out, ip+" "+cookieText.ReplaceAllString(m.st.flows[o.flows[0]].flow.Text(), ""))
			}
		}
		return out
	}
	dns := port("dns", graph.UDP, 53, "10.96.0.10", "fd00:96::10")
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"one UDP port, dual-stack", func() { m.setServicePort(dns) }, []string{
			"10.96.0.10 " + laterFragmentText("0x0800", "ct_nw_dst=10.96.0.10", 53),
			"fd00:96::10 " + laterFragmentText("0x86dd", "ct_ipv6_dst=fd00:96::10", 53)}},
		{"a TCP port on the same IP", func() { m.setServicePort(port("dns-tcp", graph.TCP, 53, "10.96.0.10")) }, []string{
			"10.96.0.10 " + laterFragmentText("0x0800", "ct_nw_dst=10.96.0.10", 53),
			"fd00:96::10 " + laterFragmentText("0x86dd", "ct_ipv6_dst=fd00:96::10", 53)}},
		{"a second UDP port on the IPv4 address", func() { m.setServicePort(port("other", graph.UDP, 5353, "10.96.0.10")) }, []string{
			"fd00:96::10 " + laterFragmentText("0x86dd", "ct_ipv6_dst=fd00:96::10", 53)}},
		{"the first removed", func() { m.removeServicePort(dns.Name) }, []string{
			"10.96.0.10 " + laterFragmentText("0x0800", "ct_nw_dst=10.96.0.10", 5353)}},
	}
	for _, s := range steps {
		s.do()
		if diff := cmp.Diff(s.want, owners()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
}

var cookieText = regexp.MustCompile(`cookie=0x[0-9a-f]+,`)

// laterFragmentText is pipeline.LaterFragmentFlows' flow as Text renders
// it, without its cookie.
func laterFragmentText(ethType, dst string, port int) string {
	return fmt.Sprintf("table=5,priority=210,dl_type=%s,nw_frag=later,ct_state=-inv+trk,ct_nw_proto=17,%s,actions=set_field:%#x/0xffff->reg5,set_field:0x10000/0x70000->reg4", ethType, dst, port)
}
