package ovs

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestServiceCIDRsFlag: --ovs-service-cidrs takes networks, and refuses
// what would route more than Services into the bridge, naming the value.
func TestServiceCIDRsFlag(t *testing.T) {
	cases := []struct {
		in   []string
		want []netip.Prefix
		err  string
	}{
		{nil, nil, ""},
		{[]string{"10.96.0.0/12", " fd00:96::/108"}, []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("fd00:96::/108")}, ""},
		{[]string{"10.96.0.0"}, nil, `--ovs-service-cidrs "10.96.0.0": not a CIDR`},
		{[]string{"10.96.0.1/12"}, nil, `"10.96.0.1/12": has host bits set (the network is 10.96.0.0/12)`},
		{[]string{"0.0.0.0/0"}, nil, `"0.0.0.0/0": a default route would take all of the host's traffic`},
		{[]string{"169.254.0.0/16"}, nil, `"169.254.0.0/16" holds 169.254.255.253, a virtual, NodePort or node address`},
		{[]string{"192.168.0.0/16"}, nil, `"192.168.0.0/16" holds 192.168.1.10, a virtual, NodePort or node address`},
	}
	for _, tc := range cases {
		o := testOptions()
		o.ServiceCIDRs, o.NodeIPs = tc.in, []string{"192.168.1.10"}
		c, err := o.pipelineConfig()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want it to say %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, c.ServiceCIDRs, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
			t.Errorf("%q: service CIDRs (-want +got):\n%s", tc.in, diff)
		}
	}
}
