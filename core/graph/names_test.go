package graph

import "testing"

// A service port's name renders as "namespace/name:port/protocol", an
// unnamed port's with an empty port part, in one allocation.
func TestServicePortNameString(t *testing.T) {
	for _, tc := range []struct {
		name ServicePortName
		want string
	}{
		{ServicePortName{Namespace: "default", Name: "web", Port: "http", Protocol: TCP}, "default/web:http/TCP"},
		{ServicePortName{Namespace: "kube-system", Name: "kube-dns", Port: "", Protocol: UDP}, "kube-system/kube-dns:/UDP"},
	} {
		if got := tc.name.String(); got != tc.want {
			t.Errorf("%#v renders as %q, want %q", tc.name, got, tc.want)
		}
	}
	n := ServicePortName{Namespace: "default", Name: "web", Port: "http", Protocol: SCTP}
	if got := testing.AllocsPerRun(100, func() { _ = n.String() }); got > 1 {
		t.Errorf("String allocated %v times, want at most 1", got)
	}
}
