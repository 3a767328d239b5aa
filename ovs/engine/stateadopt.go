package engine

import (
	"maps"
	"slices"

	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// Adopt replaces the installed view with what a dump found (flows by
// cookie, groups by their buckets' IDs), and marks for comparison what
// differs from what is wanted: an unchanged flow or group is left alone,
// and a resync with nothing to repair costs no more than the comparison.
// It returns how many flows and groups the dump found other than the
// view it replaces held (drift). An audit under way is dropped: what it
// reads is older than this.
func (s *State) Adopt(flows []ofconn.FlowInfo, groups []ofconn.GroupInfo) (flowDrift, groupDrift int) {
	s.audit = nil
	return s.adopt(s.readFlows(flows), s.readGroups(groups))
}

// adopt makes the read view the installed one and marks what differs
// from what is wanted.
func (s *State) adopt(flows map[uint64]bool, groups map[uint32]uint64) (flowDrift, groupDrift int) {
	flowDrift = symmetricDifference(s.installedFlows, flows)
	groupDrift = symmetricDifference(s.installedGroups, groups)
	s.installedFlows, s.installedGroups = flows, groups
	// A desired flow belongs in OVS unless another with its match is
	// installed in its place (shadowed).
	wanted := func(c uint64) bool { return s.flows[c] != nil && s.shadowed[c] == 0 }
	for c := range s.installedFlows {
		if !wanted(c) {
			s.touchedFlows[c] = true
		}
	}
	for c := range s.flows {
		if wanted(c) != s.installedFlows[c] {
			s.touchedFlows[c] = true
		}
	}
	for id, sig := range s.installedGroups {
		if e := s.groups[id]; e == nil || e.sig != sig {
			s.touchedGroups[id] = true
		}
	}
	for id := range s.groups {
		if _, ok := s.installedGroups[id]; !ok {
			s.touchedGroups[id] = true
		}
	}
	return flowDrift, groupDrift
}

// readFlows is the installed view of a dump's flows: those of the
// driver's, learned ones left out.
func (s *State) readFlows(flows []ofconn.FlowInfo) map[uint64]bool {
	m := make(map[uint64]bool, len(flows))
	for _, f := range flows {
		if f.Cookie&of.CookieTagMask == of.CookieTag && !of.IsLearnedCookie(f.Cookie) {
			m[f.Cookie] = true
		}
	}
	return m
}

// readGroups is the installed view of a dump's groups: those in the
// driver's range, by the signature of their buckets' IDs.
func (s *State) readGroups(groups []ofconn.GroupInfo) map[uint32]uint64 {
	m := make(map[uint32]uint64, len(groups))
	for _, g := range groups {
		if s.alloc.owns(g.ID) {
			m[g.ID] = groupSignature(g.BucketIDs)
		}
	}
	return m
}

// auditMarks are what commits changed since an audit began.
type auditMarks struct {
	flows  map[uint64]bool
	groups map[uint32]bool
}

// AuditView is the installed view as an audit began, which the audit
// compares what it reads against outside the driver's lock (Compare),
// and, once Prepare has listed them, the flow cookies and group IDs it is
// to look up, sorted: every flow installed (a flow wanted but not
// installed that the bridge holds shows in the audit's count:
// AuditUnread), every group installed or wanted.
type AuditView struct {
	flows   map[uint64]bool
	groups  map[uint32]uint64
	wanted  []uint32 // groups wanted, not installed
	Cookies []uint64
	IDs     []uint32
}

// AuditDrift is where what an audit read differs from its view: flows by
// cookie (true: the bridge holds it) and groups by ID (the signature of
// the buckets the bridge holds; absent: it holds no such group).
type AuditDrift struct {
	Flows  map[uint64]bool
	Groups map[uint32]GroupRead
}

// GroupRead is what the bridge holds of a group.
type GroupRead struct {
	Held bool
	sig  uint64
}

// Len is how many flows and groups drifted.
func (d AuditDrift) Len() int { return len(d.Flows) + len(d.Groups) }

// BeginAudit starts an audit: a read-back taken while commits go on (the
// driver's periodic audit reads the bridge in parts, off the change
// path). From now on commits record what they change. The view it
// returns is a copy of the installed maps and the wanted groups' IDs
// (O(installed), no sorting: it is taken under the driver's lock); the
// audit prepares, reads and compares outside the lock.
func (s *State) BeginAudit() *AuditView {
	s.audit = &auditMarks{flows: map[uint64]bool{}, groups: map[uint32]bool{}}
	v := &AuditView{flows: maps.Clone(s.installedFlows), groups: maps.Clone(s.installedGroups)}
	for id := range s.groups {
		if _, ok := s.installedGroups[id]; !ok {
			v.wanted = append(v.wanted, id)
		}
	}
	return v
}

// Prepare lists the cookies and the group IDs the audit looks up, sorted.
// It needs no lock.
func (v *AuditView) Prepare() {
	v.Cookies = slices.Sorted(maps.Keys(v.flows))
	v.IDs = make([]uint32, 0, len(v.groups)+len(v.wanted))
	for id := range v.groups {
		v.IDs = append(v.IDs, id)
	}
	v.IDs = append(v.IDs, v.wanted...)
	slices.Sort(v.IDs)
}

// Compare is where what the audit read (every flow with the driver's tag,
// or the flows of v.Cookies when it holds no other; the groups of v.IDs)
// differs from the view, after Prepare. It needs no lock.
func (v *AuditView) Compare(flows []ofconn.FlowInfo, groups []ofconn.GroupInfo) AuditDrift {
	d := AuditDrift{Flows: map[uint64]bool{}, Groups: map[uint32]GroupRead{}}
	read := make([]uint64, 0, len(flows)) // sorted, then walked beside v.Cookies
	for _, f := range flows {
		if f.Cookie&of.CookieTagMask == of.CookieTag && !of.IsLearnedCookie(f.Cookie) {
			read = append(read, f.Cookie)
			if !v.flows[f.Cookie] {
				d.Flows[f.Cookie] = true
			}
		}
	}
	slices.Sort(read) // the lookups' order already
	for _, c := range v.Cookies {
		for len(read) > 0 && read[0] < c {
			read = read[1:]
		}
		if len(read) == 0 || read[0] != c {
			d.Flows[c] = false
		}
	}
	seen := make(map[uint32]bool, len(groups))
	for _, g := range groups {
		if _, asked := slices.BinarySearch(v.IDs, g.ID); !asked {
			continue
		}
		seen[g.ID] = true
		sig := groupSignature(g.BucketIDs)
		if have, ok := v.groups[g.ID]; !ok || have != sig {
			d.Groups[g.ID] = GroupRead{Held: true, sig: sig}
		}
	}
	for id := range v.groups {
		if !seen[id] {
			d.Groups[id] = GroupRead{}
		}
	}
	return d
}

// AuditUnread is how many of count, the bridge's pipeline flows
// (openflow.PipelineCookies) counted while no commit was under way, an
// audit did not read: count less the flows it found by their cookies
// (found: their cookies, sorted), where a commit since the audit began
// replaces a read with the installed view. Above 0, the bridge holds
// flows the audit did not look up. ok is false when there is no audit
// (an Adopt since dropped it).
func (s *State) AuditUnread(count int, found []uint64) (unread int, ok bool) {
	if s.audit == nil {
		return 0, false
	}
	unread = count - len(found)
	for c := range s.audit.flows {
		if _, read := slices.BinarySearch(found, c); read {
			unread++
		}
		if s.installedFlows[c] {
			unread--
		}
	}
	return unread, true
}

// Auditing reports whether an audit is under way.
func (s *State) Auditing() bool { return s.audit != nil }

// EndAudit adopts an audit's drift (AuditView.Compare), except for the
// flows and groups commits changed since it began: for those the
// installed view is the commits', newer than the read. What it adopts is
// marked for comparison, as Adopt marks what differs. It costs the drift
// and the commits' changes, not the bridge. It returns how many flows
// and groups drifted; ok is false when there was no audit to end (an
// Adopt since dropped it): nothing is adopted.
func (s *State) EndAudit(d AuditDrift) (flowDrift, groupDrift int, ok bool) {
	a := s.audit
	s.audit = nil
	if a == nil {
		return 0, 0, false
	}
	for c, held := range d.Flows {
		if a.flows[c] {
			continue
		}
		flowDrift++
		if held {
			s.installedFlows[c] = true
		} else {
			delete(s.installedFlows, c)
		}
		s.touchedFlows[c] = true
	}
	for id, g := range d.Groups {
		if a.groups[id] {
			continue
		}
		groupDrift++
		if g.Held {
			s.installedGroups[id] = g.sig
		} else {
			delete(s.installedGroups, id)
		}
		s.touchedGroups[id] = true
	}
	return flowDrift, groupDrift, true
}

// symmetricDifference counts the keys in one map but not the other, and
// those in both whose values differ.
func symmetricDifference[K, V comparable](a, b map[K]V) int {
	n := 0
	for k, va := range a {
		if vb, ok := b[k]; !ok || va != vb {
			n++
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			n++
		}
	}
	return n
}
