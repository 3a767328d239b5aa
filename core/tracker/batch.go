package tracker

import (
	"slices"
	"time"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
)

// Batch is one unit of work for a driver: the delta since the last commit
// and, for a full sync, the whole graph.
type Batch struct {
	Full     bool
	Snapshot graph.Snapshot // set when Full
	Delta    graph.Delta
	// ChangedAt holds, per Service with a real change in Delta, when its
	// oldest uncommitted change happened (for network programming latency).
	ChangedAt []time.Time

	built   map[svcKey]builtService
	nodeGen uint64
	node    graph.Node
	peers   peerBatch
}

type builtService struct {
	gen   uint64
	ports []*graph.ServicePort
}

// Next rebuilds every dirty Service and returns the batch that would bring
// the driver up to date. Nothing is marked applied until Commit.
func (t *Tracker) Next(full bool) *Batch {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := &Batch{Full: full, built: make(map[svcKey]builtService, len(t.dirty)), nodeGen: t.nodeDirty, node: t.node}
	if t.nodeDirty != 0 && !graph.EqualNode(t.node, t.appliedNode) {
		n := t.node
		b.Delta.Node = &n
	}
	b.peers = t.nextPeersLocked(&b.Delta)
	var newRejections []build.Rejection
	for k := range t.dirty {
		st := t.services[k]
		res := t.builder.ServicePorts(st.svc, st.slices, t.node, &st.merged)
		newRejections = append(newRejections, freshRejections(st.rejections, res.Rejections)...)
		st.rejections = res.Rejections
		st.skipped = res.Skipped
		b.built[k] = builtService{gen: st.dirty, ports: res.Ports}
		before := b.Delta.Len()
		graph.DiffSorted(&b.Delta, st.applied, res.Ports)
		if b.Delta.Len() > before {
			b.ChangedAt = append(b.ChangedAt, st.changedAt)
		}
	}
	b.Delta.Sort()
	if full {
		b.Snapshot = t.snapshotLocked(b.built)
	}
	// Reported with the lock held so reports keep their order; observers
	// must not call back into the tracker.
	for _, r := range newRejections {
		t.opts.Observer.Rejected(r)
	}
	return b
}

// Commit records that the driver applied the batch. Services changed again
// since Next stay dirty, so their newer state goes out in the next batch.
func (t *Tracker) Commit(b *Batch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b.Full {
		t.initialSynced = true
	}
	for k, bs := range b.built {
		st := t.services[k]
		if st == nil {
			continue
		}
		st.applied = bs.ports
		if st.dirty == bs.gen {
			st.dirty = 0
			st.changedAt = time.Time{}
			delete(t.dirty, k)
		}
		t.forget(k)
	}
	if b.nodeGen != 0 {
		t.appliedNode = b.node
		if t.nodeDirty == b.nodeGen {
			t.nodeDirty = 0
		}
	}
	t.commitPeersLocked(b.peers)
}

// Snapshot returns the whole current graph without committing anything.
func (t *Tracker) Snapshot() graph.Snapshot { return t.Next(true).Snapshot }

// NotProxied lists the Services the last builds left out as a whole, and
// why (build.SkipReason: an ExternalName or headless Service, one for
// another proxy), as "namespace/name: reason", sorted. Not a rejection:
// the Services are valid, just not a proxy's.
func (t *Tracker) NotProxied() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for k, st := range t.services {
		if st.skipped != "" {
			out = append(out, k.namespace+"/"+k.name+": "+st.skipped)
		}
	}
	slices.Sort(out)
	return out
}

// snapshotLocked lists every service port: the fresh build for services in
// built, the applied ports for the rest (a clean service's applied ports
// are its current ones).
func (t *Tracker) snapshotLocked(built map[svcKey]builtService) graph.Snapshot {
	var all []*graph.ServicePort
	for k, st := range t.services {
		if bs, ok := built[k]; ok {
			all = append(all, bs.ports...)
		} else {
			all = append(all, st.applied...)
		}
	}
	graph.SortServicePorts(all)
	return graph.Snapshot{Node: t.node, Peers: t.peerListLocked(), ServicePorts: all}
}

// freshRejections returns the rejections in cur that were not in prev, so
// a problem is reported once, not at every rebuild.
func freshRejections(prev, cur []build.Rejection) []build.Rejection {
	var out []build.Rejection
	for _, r := range cur {
		if !slices.Contains(prev, r) {
			out = append(out, r)
		}
	}
	return out
}
