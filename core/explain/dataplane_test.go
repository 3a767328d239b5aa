package explain

import (
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// DataplaneDisagreement names a backend the graph does not use, and a forward that
// reached nothing.
func TestDataplaneDisagreement(t *testing.T) {
	routes := []Route{{Action: "forward", Endpoints: []Endpoint{{Endpoint: "10.0.0.1:80", Used: true}, {Endpoint: "10.0.0.2:80"}}}}
	for _, tc := range []struct {
		reached []string
		want    string
	}{
		{[]string{"10.0.0.1:80"}, ""},
		{[]string{"10.0.0.1:80", "10.0.0.2:80"}, "reached 10.0.0.2:80, which the graph does not use"},
		{nil, "the graph forwards the connection; the dataplane reached no endpoint"},
	} {
		if got := DataplaneDisagreement(routes, tc.reached); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.reached, got, tc.want)
		}
	}
}

// SourceDisagreement judges the source a dataplane reports against
// upstream's rule, where the two can be told apart.
func TestSourceDisagreement(t *testing.T) {
	x := func(from string, fromHere bool, seen string, eps ...Endpoint) Explanation {
		return Explanation{Connection: Connection{From: from, FromThisNode: fromHere},
			Routes: []Route{{Action: graph.Forward, SourceSeen: seen, MasqueradeWhy: "Rule", Endpoints: eps}}}
	}
	used := Endpoint{Endpoint: "10.0.0.1:80", Used: true}
	hairpin := Endpoint{Endpoint: "10.244.1.9:80", Used: true, Hairpin: true}
	for _, tc := range []struct {
		name    string
		x       Explanation
		srcSeen string
		want    string
	}{
		{"kept, as upstream", x("10.244.1.9", true, SourceClient, used), "10.244.1.9", ""},
		{"SNATed where upstream keeps it", x("10.244.1.9", true, SourceClient, used), "192.168.1.10", "upstream keeps the client's"},
		{"masqueraded, as upstream", x("198.51.100.7", false, SourceNode, used), "192.168.1.10", ""},
		{"kept where upstream masquerades", x("198.51.100.7", false, SourceNode, used), "198.51.100.7", "upstream masquerades it"},
		{"the node's own: not told apart", x("192.168.1.10", true, SourceNode, used), "192.168.1.10", ""},
		{"a hairpin: not judged", x("10.244.1.9", true, SourceClient, used, hairpin), "10.244.1.1, 10.244.1.9", ""},
		{"nothing reported", x("10.244.1.9", true, SourceClient, used), "", ""},
	} {
		got := SourceDisagreement(tc.x, tc.srcSeen)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
