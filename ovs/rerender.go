package ovs

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

// rendering is what an owner wants, rendered again.
type rendering struct {
	flows  []*of.Flow
	groups []*of.Group
}

// rendersAgain reports whether owner can render what it wants again.
func (s *state) rendersAgain(owner ownerKey) bool {
	o := s.owners[owner]
	return owner != "" && o != nil && o.again != nil
}

// renderedBy returns owner's rendering; rendered, if not nil, keeps it
// for the next calls.
func (s *state) renderedBy(owner ownerKey, rendered map[ownerKey]rendering) rendering {
	r, ok := rendered[owner]
	if !ok {
		r = s.owners[owner].again()
		if rendered != nil {
			rendered[owner] = r
		}
	}
	return r
}

// flowOf returns the desired flow with cookie c (nil if none), rendering
// its owner again when the entry no longer keeps it.
func (s *state) flowOf(c uint64, rendered map[ownerKey]rendering) *of.Flow {
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

// groupOf returns the desired group id (nil if none), rendering its
// owner again when the entry no longer keeps it.
func (s *state) groupOf(id uint32, rendered map[ownerKey]rendering) *of.Group {
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
func (s *state) notRenderedAgain(owner ownerKey, what string) {
	klog.ErrorS(nil, "Not rendered again by its owner: left out of the bridge", "owner", owner, "what", what)
}
