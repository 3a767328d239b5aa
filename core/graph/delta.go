package graph

import (
	"slices"
	"strings"
)

// Update is one changed service port: what was handed out before and what
// replaces it. Old and New have the same Name.
type Update struct {
	Old *ServicePort
	New *ServicePort
}

// Delta is what changed between two graphs of the same node. Service ports
// that did not change are not in it. Each list is sorted by name.
type Delta struct {
	// Node is set when the node's own view (zone, IPs, pod CIDRs) changed.
	Node *Node
	// Peers are the other nodes that appeared or changed, RemovedPeers
	// the names of those that went (both sorted; only for drivers that
	// read peers).
	Peers        []Node
	RemovedPeers []string
	Added        []*ServicePort
	Updated      []Update
	Removed      []*ServicePort
}

// Empty reports whether the delta changes nothing.
func (d Delta) Empty() bool {
	return d.Node == nil && len(d.Peers) == 0 && len(d.RemovedPeers) == 0 &&
		len(d.Added) == 0 && len(d.Updated) == 0 && len(d.Removed) == 0
}

// Len counts the service ports the delta touches.
func (d Delta) Len() int { return len(d.Added) + len(d.Updated) + len(d.Removed) }

// Sort puts every list of the delta in name order.
func (d *Delta) Sort() {
	SortServicePorts(d.Added)
	SortServicePorts(d.Removed)
	slices.SortFunc(d.Updated, func(a, b Update) int { return compareNames(a.New.Name, b.New.Name) })
}

// Index is a graph keyed by service port name: what a driver or the core
// holds as "the graph handed out so far".
type Index map[ServicePortName]*ServicePort

// IndexOf builds an Index from a list of service ports.
func IndexOf(sps []*ServicePort) Index {
	idx := make(Index, len(sps))
	for _, sp := range sps {
		idx[sp.Name] = sp
	}
	return idx
}

// Sorted lists the index's service ports by name.
func (idx Index) Sorted() []*ServicePort {
	out := make([]*ServicePort, 0, len(idx))
	for _, sp := range idx {
		out = append(out, sp)
	}
	SortServicePorts(out)
	return out
}

// Apply changes the index by a delta.
func (idx Index) Apply(d Delta) {
	for _, sp := range d.Removed {
		delete(idx, sp.Name)
	}
	for _, sp := range d.Added {
		idx[sp.Name] = sp
	}
	for _, u := range d.Updated {
		idx[u.New.Name] = u.New
	}
}

// Diff returns the delta that turns old into new. It costs O(n log n) in
// the size of both; the core's tracker stays proportional to what changed
// by diffing only the ports of the Services that changed (DiffSorted).
func Diff(old, new Index) Delta {
	var d Delta
	DiffSorted(&d, old.Sorted(), new.Sorted())
	return d
}

// DiffSorted appends to d the changes that turn old into new, two lists
// sorted by name (as a Service's ports are kept); d's lists stay sorted
// when the calls come in name order.
func DiffSorted(d *Delta, old, new []*ServicePort) {
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		switch {
		case j == len(new) || (i < len(old) && old[i].Name.Less(new[j].Name)):
			d.add(old[i], nil)
			i++
		case i == len(old) || new[j].Name.Less(old[i].Name):
			d.add(nil, new[j])
			j++
		default:
			d.add(old[i], new[j])
			i++
			j++
		}
	}
}

func (d *Delta) add(o, n *ServicePort) {
	switch {
	case o == nil && n == nil:
	case o == nil:
		d.Added = append(d.Added, n)
	case n == nil:
		d.Removed = append(d.Removed, o)
	case !Equal(o, n):
		d.Updated = append(d.Updated, Update{Old: o, New: n})
	}
}

// Peers is the other nodes keyed by name: what a driver holds as "the
// peers handed out so far".
type Peers map[string]Node

// PeersOf builds Peers from a list.
func PeersOf(nodes []Node) Peers {
	p := make(Peers, len(nodes))
	for _, n := range nodes {
		p[n.Name] = n
	}
	return p
}

// Apply changes the peers by a delta.
func (p Peers) Apply(d Delta) {
	for _, name := range d.RemovedPeers {
		delete(p, name)
	}
	for _, n := range d.Peers {
		p[n.Name] = n
	}
}

// Sorted lists the peers by name.
func (p Peers) Sorted() []Node {
	if len(p) == 0 {
		return nil
	}
	out := make([]Node, 0, len(p))
	for _, n := range p {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}
