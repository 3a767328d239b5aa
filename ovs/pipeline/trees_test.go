package pipeline

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// TestTreesMatchAFreshBuild: a long list changing (endpoints coming,
// going, changing conditions; a few at a time, now and then hundreds,
// across leafMax and fanout boundaries) rendered with the Trees kept from
// the last rendering gives exactly the groups a fresh rendering gives:
// the same IDs in the same order, keys, buckets and weights. And a small
// change re-renders only the groups on its way.
func TestTreesMatchAFreshBuild(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	all := endpointsN(graph.IPv4, 20_000)
	present := map[int]graph.Endpoint{}
	for i := range 1200 {
		present[i*7] = all[i*7]
	}
	listOf := func() []graph.Endpoint {
		var out []graph.Endpoint
		for _, e := range present {
			out = append(out, e)
		}
		graph.SortEndpoints(out)
		return out
	}
	ids := slotIDs()
	kept := groupMaker{zone: 7, fields: hashFields(graph.IPv4, of.ProtoTCP), ids: ids, trees: &Trees{}}
	fresh := kept
	fresh.trees = nil
	list := graph.EndpointListOf(listOf()...)
	rendered := 0
	for step := range 300 {
		n := 1 + r.IntN(3)
		if step%40 == 39 {
			n = 600 // a rollout: the tree reshapes
		}
		for range n {
			i := r.IntN(len(all))
			switch e, ok := present[i]; {
			case !ok:
				present[i] = all[i]
			case r.IntN(2) == 0:
				delete(present, i)
			default:
				e.Ready = !e.Ready
				present[i] = e
			}
		}
		list = list.Update(listOf())
		before := slices.Clone(kept.trees.bySlot["x"].rootGroups())
		got := kept.groups(0x80000000, "x", list)
		kept.trees.sweep()
		want := fresh.groups(0x80000000, "x", list)
		if len(got) != len(want) {
			t.Fatalf("step %d: %d groups, a fresh rendering makes %d", step, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.ID != w.ID || g.Key != w.Key || !slices.Equal(g.BucketIDs(), w.BucketIDs()) || fmt.Sprint(weights(g)) != fmt.Sprint(weights(w)) {
				t.Fatalf("step %d: group %d (%#x) differs from a fresh rendering's (%#x)", step, i, g.ID, w.ID)
			}
		}
		if n < 4 {
			for _, g := range got {
				if !slices.Contains(before, g) {
					rendered++
				}
			}
		}
	}
	// A change of one to three endpoints renders its leaves and the
	// groups above them: a few groups, not the ~6 of a 1 200-endpoint tree
	// for every change.
	t.Logf("rendered %d", rendered)
	if rendered > 300*3*2 {
		t.Errorf("small changes rendered %d groups", rendered)
	}
}

// rootGroups are the groups of a kept tree as last rendered.
func (k *keptTree) rootGroups() []*of.Group {
	if k == nil {
		return nil
	}
	var out []*of.Group
	var walk func(n *treeNode)
	walk = func(n *treeNode) {
		out = append(out, n.group)
		for _, c := range n.children {
			if c != nil {
				walk(c)
			}
		}
	}
	walk(k.root)
	return out
}

func weights(g *of.Group) []uint16 {
	w, ok := g.Buckets.(of.Weighted)
	if !ok {
		return nil
	}
	var out []uint16
	for i := range g.Buckets.Len() {
		out = append(out, w.Weight(i))
	}
	return out
}
