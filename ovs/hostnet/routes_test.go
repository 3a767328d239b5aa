package hostnet

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRoutesWithServiceCIDRs: a ClusterIP inside a service CIDR has no
// route of its own (the CIDR's one route takes it into the bridge); one
// outside keeps its /32; a family without a gateway gets neither.
func TestRoutesWithServiceCIDRs(t *testing.T) {
	pfx, ip := netip.MustParsePrefix, netip.MustParseAddr
	vip := ip("169.254.255.253")
	base := Config{Addresses: []netip.Prefix{pfx("10.244.1.1/24")}, VirtualIPs: []netip.Addr{vip, ip("fdff:5359::fffd")}}
	into := func(dst string) Route { return Route{Dst: pfx(dst), Via: vip, ViaGateway: true} }
	static := map[netip.Prefix]Route{pfx("169.254.255.253/32"): {Dst: pfx("169.254.255.253/32"), ViaGateway: true}}
	with := func(rs ...Route) map[netip.Prefix]Route {
		out := map[netip.Prefix]Route{}
		for dst, r := range static {
			out[dst] = r
		}
		for _, r := range rs {
			out[r.Dst] = r
		}
		return out
	}
	frontends := []netip.Addr{ip("10.96.0.10"), ip("10.96.200.1"), ip("172.20.0.5"), ip("fd00:96::a")}
	cases := []struct {
		name  string
		cidrs []netip.Prefix
		want  map[netip.Prefix]Route
	}{
		{"no service CIDRs: a route per ClusterIP", nil,
			with(into("10.96.0.10/32"), into("10.96.200.1/32"), into("172.20.0.5/32"))},
		{"one CIDR: its route, and the ClusterIP outside it", []netip.Prefix{pfx("10.96.0.0/16")},
			with(into("10.96.0.0/16"), into("172.20.0.5/32"))},
		{"a CIDR of a family without a gateway: nothing", []netip.Prefix{pfx("10.96.0.0/16"), pfx("fd00:96::/108")},
			with(into("10.96.0.0/16"), into("172.20.0.5/32"))},
	}
	for _, tc := range cases {
		c := base
		c.ServiceCIDRs = tc.cidrs
		if diff := cmp.Diff(tc.want, c.Routes(frontends, nil), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
			t.Errorf("%s: routes (-want +got):\n%s", tc.name, diff)
		}
	}
}
