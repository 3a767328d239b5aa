package pipeline

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// An endpoint bucket's key names its actions (of.Keyed's contract): over
// zones, affinity, both families (and an IPv4-mapped IPv6 address, whose
// 16 bytes are an IPv4 address's), addresses and ports, two buckets with
// equal keys have equal actions, and the same bucket built again has the
// same key. (Equal actions may have different keys: affinity's buckets
// do not name the zone, their keys do.) The shapes' salts are computed
// once and then read.
func TestBucketKeysNameTheirActions(t *testing.T) {
	var eps []graph.Endpoint
	for _, a := range []string{"10.0.0.1", "10.0.0.2", "fd00::1", "fd00::2", "::ffff:10.0.0.1"} {
		for _, port := range []uint16{80, 81, 8080} {
			eps = append(eps, graph.Endpoint{IP: netip.MustParseAddr(a), Port: port})
		}
	}
	type bucket struct {
		key  uint64
		text string
		what string
	}
	var all []bucket
	for _, zone := range []uint16{0, 21337, 65535} {
		for _, affinity := range []bool{false, true} {
			b := endpointBuckets{zone: zone, eps: eps, affinity: affinity}
			for i, e := range eps {
				var text []string
				for _, a := range b.Bucket(i) {
					text = append(text, a.Text())
				}
				all = append(all, bucket{b.BucketKey(i), strings.Join(text, ","), e.String()})
				again := endpointBuckets{zone: zone, eps: []graph.Endpoint{e}, affinity: affinity}
				if again.BucketKey(0) != b.BucketKey(i) {
					t.Errorf("%s in zone %d (affinity %v) got key %#x alone, %#x in a list", e, zone, affinity, again.BucketKey(0), b.BucketKey(i))
				}
			}
		}
	}
	for i, x := range all {
		for _, y := range all[i+1:] {
			if x.key == y.key && x.text != y.text {
				t.Errorf("keys %#x and %#x for buckets %q (%s) and %q (%s): equal keys must mean equal actions",
					x.key, y.key, x.text, x.what, y.text, y.what)
			}
		}
	}
	if _, ok := any(endpointBuckets{}).(of.Keyed); !ok {
		t.Fatal("endpointBuckets are not of.Keyed: their IDs would be hashed from their actions, built twice")
	}
	if got := testing.AllocsPerRun(100, func() { bucketShape(21337, false, true) }); got != 0 {
		t.Fatalf("a known shape's salt allocated %v times, want 0 (it is cached)", got)
	}
}
