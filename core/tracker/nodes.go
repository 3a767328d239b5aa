package tracker

import (
	"maps"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
	v1 "k8s.io/api/core/v1"
)

// peerState keeps the other nodes (Options.Peers): their current views,
// the views last committed, and which changed since (name -> generation).
type peerState struct {
	current graph.Peers
	applied graph.Peers
	dirty   map[string]uint64
}

func newPeerState() peerState {
	return peerState{current: graph.Peers{}, applied: graph.Peers{}, dirty: map[string]uint64{}}
}

// UpsertNode implements source.Sink. Other Nodes are kept only with
// Options.Peers.
func (t *Tracker) UpsertNode(n *v1.Node) {
	own := n.Name == t.opts.NodeName
	if !own && !t.opts.Peers {
		return
	}
	t.opts.Observer.ObjectChanged("Node")
	view, rejs := NodeView(n)
	t.report(n.Name, rejs)
	if own {
		t.setNode(view)
	} else {
		t.setPeer(n.Name, &view)
	}
}

// DeleteNode implements source.Sink.
func (t *Tracker) DeleteNode(name string) {
	own := name == t.opts.NodeName
	if !own && !t.opts.Peers {
		return
	}
	t.opts.Observer.ObjectChanged("Node")
	t.report(name, nil)
	if own {
		t.setNode(graph.Node{Name: name})
	} else {
		t.setPeer(name, nil)
	}
}

// report hands a Node's rejections to the observer once, not at every
// status update.
func (t *Tracker) report(name string, rejs []build.Rejection) {
	t.mu.Lock()
	fresh := freshRejections(t.nodeRejs[name], rejs)
	if len(rejs) == 0 {
		delete(t.nodeRejs, name)
	} else {
		t.nodeRejs[name] = rejs
	}
	t.mu.Unlock()
	for _, r := range fresh {
		t.opts.Observer.Rejected(r)
	}
}

// setNode records the node's view. A zone change rebuilds every Service
// (topology hints depend on it); an IP or pod CIDR change only reaches the
// driver.
func (t *Tracker) setNode(view graph.Node) {
	t.mu.Lock()
	changed := !graph.EqualNode(view, t.node)
	if changed {
		if view.Zone != t.node.Zone {
			now := t.opts.Now()
			for k := range t.services {
				t.markDirty(k, now)
			}
		}
		t.node = view
		t.gen++
		t.nodeDirty = t.gen
	}
	t.mu.Unlock()
	if changed {
		t.changed()
	}
}

// setPeer records another node's view (nil: the node is gone).
func (t *Tracker) setPeer(name string, view *graph.Node) {
	t.mu.Lock()
	old, had := t.peers.current[name]
	changed := false
	switch {
	case view == nil && had:
		delete(t.peers.current, name)
		changed = true
	case view != nil && (!had || !graph.EqualNode(old, *view)):
		t.peers.current[name] = *view
		changed = true
	}
	if changed {
		t.gen++
		t.peers.dirty[name] = t.gen
	}
	t.mu.Unlock()
	if changed {
		t.changed()
	}
}

// peerBatch is the peers part of a batch: the changed views and their
// generations, committed together.
type peerBatch struct {
	gens  map[string]uint64
	views map[string]*graph.Node // nil: removed
}

// nextPeersLocked puts the peers that differ from what was committed into
// the delta.
func (t *Tracker) nextPeersLocked(d *graph.Delta) peerBatch {
	pb := peerBatch{gens: maps.Clone(t.peers.dirty), views: map[string]*graph.Node{}}
	for name := range t.peers.dirty {
		cur, has := t.peers.current[name]
		app, had := t.peers.applied[name]
		switch {
		case has && (!had || !graph.EqualNode(cur, app)):
			d.Peers = append(d.Peers, cur)
			pb.views[name] = &cur
		case !has && had:
			d.RemovedPeers = append(d.RemovedPeers, name)
			pb.views[name] = nil
		}
	}
	slices.SortFunc(d.Peers, func(a, b graph.Node) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(d.RemovedPeers)
	return pb
}

// commitPeersLocked records the peers of a committed batch.
func (t *Tracker) commitPeersLocked(pb peerBatch) {
	for name, v := range pb.views {
		if v == nil {
			delete(t.peers.applied, name)
		} else {
			t.peers.applied[name] = *v
		}
	}
	for name, gen := range pb.gens {
		if t.peers.dirty[name] == gen {
			delete(t.peers.dirty, name)
		}
	}
}

// peerListLocked lists the current peers by name.
func (t *Tracker) peerListLocked() []graph.Node { return t.peers.current.Sorted() }
