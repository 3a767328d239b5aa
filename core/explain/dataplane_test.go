package explain

import "testing"

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
