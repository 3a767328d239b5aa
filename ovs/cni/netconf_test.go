package cni

import (
	"github.com/switchyard-proxy/switchyard/ovs/podport"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseNetConf(t *testing.T) {
	for _, tc := range []struct {
		name, in, err string
		check         func(*NetConf) bool
	}{
		{name: "defaults", in: `{"cniVersion":"1.0.0","name":"switchyard","type":"switchyard"}`, check: func(c *NetConf) bool {
			return c.Bridge == DefaultBridge && c.OVSRunDir == DefaultOVSRunDir && c.NodeFile == DefaultNodeFile && c.IPAMDir == DefaultIPAMDir
		}},
		{name: "set", in: `{"cniVersion":"1.0.0","name":"n","type":"switchyard","bridge":"br-x","ipamDir":"/tmp/i","runtimeConfig":{"ips":["10.0.0.5/24"]}}`,
			check: func(c *NetConf) bool {
				return c.Bridge == "br-x" && c.IPAMDir == "/tmp/i" && len(c.RuntimeConfig.IPs) == 1
			}},
		{name: "no name", in: `{"cniVersion":"1.0.0","type":"switchyard"}`, err: "no name"},
		{name: "a name that is a path", in: `{"cniVersion":"1.0.0","name":"../x","type":"switchyard"}`, err: "cannot name a directory"},
		{name: "relative node file", in: `{"cniVersion":"1.0.0","name":"n","type":"switchyard","nodeFile":"node.json"}`, err: "not an absolute path"},
		{name: "not JSON", in: `{`, err: "network configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseNetConf([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !tc.check(c) {
				t.Fatalf("%+v, %v", c, err)
			}
		})
	}
}

func TestRequestedIPs(t *testing.T) {
	c := &NetConf{}
	c.RuntimeConfig.IPs = []string{"fd00::5/64"}
	a, err := ParsePodArgs("IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;IP=10.0.0.5")
	if err != nil {
		t.Fatal(err)
	}
	got, err := requestedIPs(c, a)
	if err != nil || len(got) != 2 || got[0] != netip.MustParseAddr("10.0.0.5") || got[1] != netip.MustParseAddr("fd00::5") || a.Pod() != "ns/p" {
		t.Fatalf("%v %v %q", got, err, a.Pod())
	}
	if _, err := ParsePodArgs("FOO=bar"); err == nil {
		t.Fatal("an unknown CNI_ARGS key without IgnoreUnknown was accepted")
	}
}

func TestNodeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "node.json")
	n := podport.NodeNetwork{Node: "n1", PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24")},
		Gateways: []netip.Addr{netip.MustParseAddr("10.244.1.1")}, MTU: 1450}
	if err := podport.WriteNodeNetwork(path, n); err != nil {
		t.Fatal(err)
	}
	back, err := podport.ReadNodeNetwork(path)
	if err != nil || back.Node != "n1" || back.MTU != 1450 || back.Gateways[0] != n.Gateways[0] {
		t.Fatalf("%+v %v", back, err)
	}
	bad := n
	bad.Gateways = []netip.Addr{netip.MustParseAddr("10.9.9.9")}
	if err := podport.WriteNodeNetwork(path, bad); err == nil {
		t.Fatal("a gateway outside its pod CIDR was written")
	}
	if _, err := podport.ReadNodeNetwork(filepath.Join(t.TempDir(), "none.json")); err == nil || !strings.Contains(err.Error(), "is switchyard running") {
		t.Fatalf("missing file: %v", err)
	}
}
