package vswitchd

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// A failed conntrack flush is tried again at the next round, unless its
// endpoint is served again by then; the first failure puts the rest of
// the round off.
func TestFailedUDPFlushesAreTriedAgain(t *testing.T) {
	ep := func(s string) graph.Endpoint {
		ap := netip.MustParseAddrPort(s)
		return graph.Endpoint{IP: ap.Addr(), Port: ap.Port()}
	}
	a, b, c := ep("10.244.0.5:53"), ep("10.244.0.6:53"), ep("10.244.0.7:53")
	var q FlushQueue
	var tried []string
	fail := map[string]bool{}
	served := map[string]bool{}
	flush := func(e graph.Endpoint) error {
		tried = append(tried, e.String())
		if fail[e.String()] {
			return fmt.Errorf("no answer")
		}
		return nil
	}
	isServed := func(e graph.Endpoint) bool { return served[e.String()] }
	round := func(eps ...graph.Endpoint) (string, error) {
		tried = nil
		err := q.Run(eps, isServed, flush)
		return strings.Join(tried, " "), err
	}

	fail[b.String()] = true
	if got, err := round(a, b, c); err == nil || got != "10.244.0.5:53 10.244.0.6:53" {
		t.Fatalf("round 1 tried %q (err %v); want a, then b failing and c put off", got, err)
	}
	if q.Len() != 2 {
		t.Fatalf("%d pending, want b and c", q.Len())
	}
	delete(fail, b.String())
	served[c.String()] = true // c is an endpoint again: its flush would cut its new connections
	if got, err := round(a); err != nil || got != "10.244.0.6:53 10.244.0.5:53" {
		t.Fatalf("round 2 tried %q (err %v); want b again and the new a, not c", got, err)
	}
	if got, err := round(); err != nil || got != "" || q.Len() != 0 {
		t.Fatalf("round 3 tried %q (err %v), %d pending; want nothing", got, err, q.Len())
	}
}
