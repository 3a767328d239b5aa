package graph

import (
	"encoding/json"
	"net/netip"
	"testing"
)

// An endpoint's place is kept once per node and zone, yet endpoints
// compare by value, and the JSON keeps its documented shape.
func TestEndpointPlace(t *testing.T) {
	ip := netip.MustParseAddr("10.244.1.5")
	for _, tc := range []struct {
		name       string
		node, zone string
		json       string
	}{
		{"node and zone", "node-1", "zone-a", `{"ip":"10.244.1.5","port":8080,"node":"node-1","zone":"zone-a","local":false,"ready":true,"serving":true,"terminating":false}`},
		{"node only", "node-1", "", `{"ip":"10.244.1.5","port":8080,"node":"node-1","local":false,"ready":true,"serving":true,"terminating":false}`},
		{"zone only", "", "zone-a", `{"ip":"10.244.1.5","port":8080,"zone":"zone-a","local":false,"ready":true,"serving":true,"terminating":false}`},
		{"neither", "", "", `{"ip":"10.244.1.5","port":8080,"local":false,"ready":true,"serving":true,"terminating":false}`},
	} {
		e := Endpoint{IP: ip, Port: 8080, Ready: true, Serving: true, Place: PlaceOf(tc.node, tc.zone)}
		if e.Node() != tc.node || e.Zone() != tc.zone {
			t.Errorf("%s: node %q zone %q", tc.name, e.Node(), e.Zone())
		}
		// Built apart (other strings with the same text), still equal.
		other := Endpoint{IP: ip, Port: 8080, Ready: true, Serving: true, Place: PlaceOf(string([]byte(tc.node)), string([]byte(tc.zone)))}
		if e != other {
			t.Errorf("%s: two endpoints with one place differ", tc.name)
		}
		b, err := json.Marshal(e)
		if err != nil || string(b) != tc.json {
			t.Errorf("%s: JSON %s (%v), want %s", tc.name, b, err, tc.json)
		}
		var back Endpoint
		if err := json.Unmarshal(b, &back); err != nil || back != e {
			t.Errorf("%s: read back %+v (%v), want %+v", tc.name, back, err, e)
		}
	}
	if PlaceOf("node-1", "") == PlaceOf("node-2", "") || PlaceOf("n", "z") == PlaceOf("z", "n") {
		t.Error("different places compare equal")
	}
}
