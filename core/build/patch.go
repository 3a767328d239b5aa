package build

import (
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
)

// A change of a few endpoints of a large Service is patched in: the
// endpoints whose winning copy changed are taken out of, and put into,
// the last build's lists (graph.EndpointList.Patch), without looking at
// the Service's other endpoints. That holds only while categorization's
// choices stay as they were: the topology mode, the fallback to
// serving-terminating endpoints, which local endpoints count. Those are
// functions of counts over the deduplicated endpoints (familyCounts),
// kept per service port next to its merged list and moved by each
// change. When a choice moves, or the change is large, the port is built
// from its merged list as before. TestPatchedBuildsMatchAFreshBuild
// checks both paths against a fresh build (TestKeptMergeMatchesAFreshBuild
// hands a new Service object each time, so it checks the long way only).

// familyCounts are what categorize's choices depend on, over a port's
// deduplicated endpoints of one family.
type familyCounts struct {
	ready, readyWithoutNodeHints, readyForNode, readyWithoutZoneHints, readyForZone int
	servingTerminating                                                              int // and not ready
	localReady, localServingTerminating                                             int
}

// add counts c d times (d = 1 or -1) for node.
func (fc *familyCounts) add(c *candidate, node graph.Node, d int) {
	switch {
	case c.ep.Ready:
		fc.ready += d
		if len(c.nodeHints()) == 0 {
			fc.readyWithoutNodeHints += d
		} else if c.hintedForNode(node.Name) {
			fc.readyForNode += d
		}
		if len(c.zoneHints()) == 0 {
			fc.readyWithoutZoneHints += d
		} else if c.hintedForZone(node.Zone) {
			fc.readyForZone += d
		}
		if c.ep.Local {
			fc.localReady += d
		}
	case servingTerminating(c):
		fc.servingTerminating += d
		if c.ep.Local {
			fc.localServingTerminating += d
		}
	}
}

func (fc *familyCounts) hasAny() bool { return fc.ready+fc.servingTerminating > 0 }

// familyIndex is a family's index in counts: IPv4 0, IPv6 1.
func familyIndex(f graph.IPFamily) int {
	if f == graph.IPv4 {
		return 0
	}
	return 1
}

// choice is what categorize chooses for one family (categorize.go).
type choice struct {
	mode     topologyMode
	fallback bool // no endpoint is ready: cluster endpoints are the serving-terminating ones
	local    int  // local endpoints: 0 none, 1 the ready ones, 2 the serving-terminating ones
}

func choiceOf(fc familyCounts) choice {
	c := choice{fallback: fc.ready == 0}
	switch {
	case fc.ready > 0 && fc.readyWithoutNodeHints == 0 && fc.readyForNode > 0:
		c.mode = topologySameNode
	case fc.ready > 0 && fc.readyWithoutZoneHints == 0 && fc.readyForZone > 0:
		c.mode = topologySameZone
	}
	switch {
	case fc.localReady > 0:
		c.local = 1
	case fc.localServingTerminating > 0:
		c.local = 2
	}
	return c
}

func (c choice) inCluster(cd *candidate, node graph.Node) bool {
	if c.fallback {
		return servingTerminating(cd)
	}
	return cd.ep.Ready && availableForTopology(cd, c.mode, node.Name, node.Zone)
}

func (c choice) inLocal(cd *candidate) bool {
	switch c.local {
	case 1:
		return cd.ep.Local && cd.ep.Ready
	case 2:
		return cd.ep.Local && servingTerminating(cd)
	}
	return false
}

// patchOutcome is how far patchedPort got.
type patchOutcome int

const (
	notPatched  patchOutcome = iota // nothing done: build the port from its slices
	listUpdated                     // the kept list is this build's, but the port must be built from it
	patched                         // the port is built
)

// port is the kept port of key (nil: none).
func (m *Merged) port(key portKey) *keptPort {
	for i := range m.ports {
		if m.ports[i].key == key {
			return &m.ports[i]
		}
	}
	return nil
}

// keyChange is one ip:port whose copies changed (key: its IP and port),
// with its winning copy before and after, if any.
type keyChange struct {
	key                  graph.Endpoint
	before, after        candidate
	hadWinner, hasWinner bool
}

// patchedPort builds the port by patching the last build's, when it can.
func (b *Builder) patchedPort(si *serviceInfo, p portInfo, key portKey, node graph.Node, m *Merged, ch sliceChanges, svc *object.Service) (*graph.ServicePort, patchOutcome) {
	sc := &b.sc
	if m == nil || ch.rebuild || m.svc != svc || m.zone != node.Zone || runsOf(sc.order, key) < 2 {
		return nil, notPatched
	}
	kp, prev := m.port(key), m.lastPort(p)
	if kp == nil || !kp.counted || prev == nil {
		return nil, notPatched
	}
	gone := append(sc.patchGone[:0], sc.sortedRuns(ch.gone, key, node.Name)...)
	sc.patchGone = gone
	added := sc.sortedRuns(ch.added, key, node.Name)
	if len(gone)+len(added) > len(kp.list)/4+64 {
		return nil, notPatched // a large change: one merge pass costs less
	}
	replaced, inPlace := changedCopies(gone, added, &sc.patchNew, &sc.patchKeys)
	if len(sc.patchKeys) == 0 {
		kp.used = true
		return prev, patched // nothing of this port changed
	}
	// The keys whose copies changed, and their winners before.
	changes := sc.patchChanges[:0]
	for _, k := range sc.patchKeys {
		c := keyChange{key: k}
		c.before, c.hadWinner = winnerOf(kp.list, k)
		changes = append(changes, c)
	}
	sc.patchChanges = changes
	if inPlace {
		if !replaceInPlace(kp.list, replaced) {
			return nil, notPatched
		}
		kp.used = true
	} else {
		sc.keptCandidates(m, ch, key, node.Name)
	}
	counts := kp.counts
	for i := range changes {
		c := &changes[i]
		c.after, c.hasWinner = winnerOf(kp.list, c.key)
		f := familyIndex(graph.FamilyOf(c.key.IP))
		if c.hadWinner {
			counts[f].add(&c.before, node, -1)
		}
		if c.hasWinner {
			counts[f].add(&c.after, node, 1)
		}
	}
	for _, fam := range si.families.List() {
		if f := familyIndex(fam); choiceOf(counts[f]) != choiceOf(kp.counts[f]) {
			kp.counted = false
			return nil, listUpdated
		}
	}
	sp, ok := si.patchLists(p, prev, changes, counts, node, sc)
	if !ok {
		kp.counted = false
		return nil, listUpdated
	}
	kp.counts, kp.counted = counts, true
	b.patches++
	return sp, patched
}
