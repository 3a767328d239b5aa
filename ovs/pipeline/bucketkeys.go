package pipeline

import (
	"net/netip"
	"sync"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// An endpoint's bucket is a function of the group's zone and affinity,
// the endpoint's family, address and port, and of this package's code.
// endpointBuckets name it by those (of.Keyed), so the driver learns a
// group's bucket IDs without building each bucket's actions, and builds
// them once, for the message (before: twice, the first time only to hash
// them; ~a tenth of a cold sync's allocations: docs/scale.md).
//
// The code's part is the shape: the encoding of the bucket of a sample
// endpoint of each family, zone and affinity, computed once per process.
// A change to what a bucket holds changes it, and with it every ID, so a
// restart after an upgrade replaces the groups (each once) rather than
// adopting stale buckets. A change that treats some endpoints unlike the
// samples (by port, say) must bump bucketKeyVersion.

// bucketKeyVersion is bumped by hand when buckets change in a way the
// samples' encodings do not show.
const bucketKeyVersion = 1

// BucketKey implements of.Keyed.
func (b endpointBuckets) BucketKey(i int) uint64 {
	e := b.endpoint(i)
	k := bucketShape(b.zone, b.affinity, e.IP.Is4())
	return of.Mix64(k ^ endpointHash(&e))
}

// shapeOf names a bucket shape: what besides the endpoint a bucket's
// actions depend on.
type shapeOf struct {
	zone     uint16
	affinity bool
	v4       bool
}

// shapes caches bucketShape (a few entries: one zone, two affinities,
// two families).
var shapes sync.Map // shapeOf -> uint64

// bucketShape is the salt of the keys of buckets of one shape: a hash of
// a sample bucket's encoding, the shape itself and bucketKeyVersion.
func bucketShape(zone uint16, affinity, v4 bool) uint64 {
	s := shapeOf{zone, affinity, v4}
	if k, ok := shapes.Load(s); ok {
		return k.(uint64)
	}
	sample := graph.Endpoint{IP: netip.MustParseAddr("2001:db8::5"), Port: 4321}
	if v4 {
		sample.IP = netip.MustParseAddr("192.0.2.5")
	}
	b := endpointBuckets{zone: zone, eps: []graph.Endpoint{sample}, affinity: affinity}
	k := uint64(of.BucketID(b.Bucket(0), of.DefaultWeight))<<32 | uint64(zone)<<16 | bucketKeyVersion<<2
	if affinity {
		k |= 1
	}
	if v4 {
		k |= 2
	}
	k = of.Mix64(k)
	shapes.Store(s, k)
	return k
}
