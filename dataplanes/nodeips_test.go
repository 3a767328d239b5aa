package dataplanes

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

func TestParseIPFlag(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []string
		err  string
	}{
		{nil, nil, ""},
		{[]string{"192.0.2.1", "2001:db8::1"}, []string{"192.0.2.1", "2001:db8::1"}, ""},
		{[]string{"::ffff:192.0.2.1"}, []string{"192.0.2.1"}, ""},
		{[]string{"192.0.2.1", "192.0.2.2"}, []string{"192.0.2.1"}, "--x-node-ips: more than one IPv4 address"},
		{[]string{"nope", "192.0.2.1"}, []string{"192.0.2.1"}, `--x-node-ips: "nope" is not an IP address`},
	} {
		got, err := ParseIPFlag("x-node-ips", tc.in)
		var gotS []string
		for _, ip := range got {
			gotS = append(gotS, ip.String())
		}
		if !slices.Equal(gotS, tc.want) || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%v: %v, %v; want %v, %q", tc.in, gotS, err, tc.want, tc.err)
		}
	}
	node := graph.Node{IPs: []netip.Addr{netip.MustParseAddr("192.0.2.9")}}
	if got := NodeIPs(nil, node); !slices.Equal(got, node.IPs) {
		t.Errorf("without a flag: %v", got)
	}
	flag := []netip.Addr{netip.MustParseAddr("192.0.2.1")}
	if got := NodeIPs(flag, node); !slices.Equal(got, flag) {
		t.Errorf("with a flag: %v", got)
	}
}
