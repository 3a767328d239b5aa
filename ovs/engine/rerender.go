package engine

import (
	"fmt"

	"k8s.io/klog/v2"

	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// A service port's flows and groups are what its owner renders from the
// service port, the pipeline's configuration and its group IDs, all kept
// by the model anyway. So once committed they are not kept: the state
// keeps their hashes (a flow's cookie, identity and sum; a group's bucket
// signature), and when a message or a report needs one (a repair after a
// read-back, a modified group, a report of a shadowed flow) its owner
// renders them again, once per owner per commit. Kept, they were a large
// part of the heap (docs/scale.md, "Figures behind the code").

// Rendering is what an owner wants, rendered again.
type Rendering struct {
	flows  []*of.Flow
	groups []*of.Group
}

// rendersAgain reports whether owner can render what it wants again.
func (s *State) rendersAgain(owner OwnerKey) bool {
	o := s.owners[owner]
	return owner != "" && o != nil && o.again != nil
}

// renderedBy returns owner's Rendering; rendered, if not nil, keeps it
// for the next calls.
func (s *State) renderedBy(owner OwnerKey, rendered map[OwnerKey]Rendering) Rendering {
	r, ok := rendered[owner]
	if !ok {
		r = s.owners[owner].again()
		if rendered != nil {
			rendered[owner] = r
		}
	}
	return r
}

// FlowOf returns the desired flow with cookie c (nil if none), Rendering
// its owner again when the entry no longer keeps it.
func (s *State) FlowOf(c uint64, rendered map[OwnerKey]Rendering) *of.Flow {
	e := s.flows[c]
	if e == nil {
		return nil
	}
	if e.flow != nil {
		return e.flow
	}
	for _, f := range s.renderedBy(e.owner, rendered).flows {
		if s.cookieOf(f) == c {
			return f
		}
	}
	s.notRenderedAgain(e.owner, fmt.Sprintf("flow %#x", c))
	return nil
}

// GroupOf returns the desired group id (nil if none), Rendering its
// owner again when the entry no longer keeps it.
func (s *State) GroupOf(id uint32, rendered map[OwnerKey]Rendering) *of.Group {
	e := s.groups[id]
	if e == nil {
		return nil
	}
	if e.group != nil {
		return e.group
	}
	for _, g := range s.renderedBy(e.owner, rendered).groups {
		if g.ID == id && groupSignature(g.BucketIDs()) == e.sig {
			return g
		}
	}
	s.notRenderedAgain(e.owner, fmt.Sprintf("group %#x", id))
	return nil
}

// notRenderedAgain is reached only by a renderer that does not render
// what it was set with (a bug): what it left out is not sent, and said.
func (s *State) notRenderedAgain(owner OwnerKey, what string) {
	klog.ErrorS(nil, "Not rendered again by its owner: left out of the bridge", "owner", owner, "what", what)
}
