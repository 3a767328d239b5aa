//go:build windows

package hns

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/Microsoft/hcsshim/hcn"
)

// TestTypesRoundTripThroughHCN checks, on Windows where hcn compiles,
// that every field of our mirror types survives a trip through hcn's own
// types: a renamed or retyped hcn field would otherwise be dropped
// silently by the JSON conversion in client_windows.go.
func TestTypesRoundTripThroughHCN(t *testing.T) {
	lb := LoadBalancer{ID: "lb-1", HostComputeEndpoints: []string{"e1", "e2"}, SourceVIP: "10.0.0.1",
		FrontendVIPs: []string{"10.96.0.1"}, SchemaVersion: V2, Flags: LBFlagDSR | LBFlagIPv6,
		PortMappings: []PortMapping{{Protocol: 6, InternalPort: 8080, ExternalPort: 80,
			DistributionType: DistributionSourceIP, Flags: PortFlagVipExternalIP | PortFlagLocalRoutedVIP}}}
	ep := Endpoint{ID: "e1", Name: "switchyard-remote-10.244.2.7", HostComputeNetwork: "n1",
		Policies:         []EndpointPolicy{providerAddressPolicy("192.168.0.12")},
		IPConfigurations: []IPConfig{{IPAddress: "10.244.2.7", PrefixLength: 24}},
		MacAddress:       "02-11-0a-f4-02-07", Flags: 1, SchemaVersion: V2}
	cases := []struct {
		name     string
		ours     any
		viaHCN   any
		backHere any
	}{
		{"load balancer", lb, &hcn.HostComputeLoadBalancer{}, &LoadBalancer{}},
		{"endpoint", ep, &hcn.HostComputeEndpoint{}, &Endpoint{}},
	}
	for _, c := range cases {
		if err := convert(c.ours, c.viaHCN); err != nil {
			t.Fatalf("%s: to hcn: %v", c.name, err)
		}
		if err := convert(c.viaHCN, c.backHere); err != nil {
			t.Fatalf("%s: from hcn: %v", c.name, err)
		}
		if got := reflect.ValueOf(c.backHere).Elem().Interface(); !reflect.DeepEqual(normalizeJSON(t, got), normalizeJSON(t, c.ours)) {
			t.Errorf("%s: lost in hcn round trip:\n got %+v\nwant %+v", c.name, got, c.ours)
		}
	}
}

func normalizeJSON(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}
