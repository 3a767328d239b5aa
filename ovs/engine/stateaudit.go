package engine

import (
	"cmp"
	"slices"

	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// The periodic audit's side of the state: the view it compares what it
// reads against, and the adoption of what it found.

// auditMarks are what commits changed since an audit began.
type auditMarks struct {
	flows  map[uint64]bool
	groups map[uint32]bool
}

// AuditView is the installed view as an audit began, which the audit
// compares what it reads against outside the driver's lock (Compare):
// once Fill has copied it and Prepare has sorted it, the flow cookies and
// group IDs it is to look up: every flow installed (a flow wanted but not
// installed that the bridge holds shows in the audit's count:
// AuditUnread), every group installed or wanted. Lists, not maps: a copy
// taken under the lock only appends.
type AuditView struct {
	state   *State
	marks   *auditMarks // the audit's: gone from state when it is dropped
	Cookies []uint64    // the installed flows'
	groups  []groupSig  // the installed groups, by ID after Prepare
	IDs     []uint32    // the installed groups' and the wanted ones'
	// sizes, as the audit began: installed flows, installed groups, groups
	sizes [3]int
}

// groupSig is a group: its ID and its buckets' signature.
type groupSig struct {
	id  uint32
	sig uint64
}

func (g groupSig) compare(o groupSig) int { return cmp.Compare(g.id, o.id) }

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
// path). From now on commits record what they change. It costs O(1): the
// view it returns is empty until Fill copies the installed view into it.
func (s *State) BeginAudit() *AuditView {
	s.audit = &auditMarks{flows: map[uint64]bool{}, groups: map[uint32]bool{}}
	return &AuditView{state: s, marks: s.audit, sizes: [3]int{len(s.installedFlows), len(s.installedGroups), len(s.groups)}}
}

// Reserve makes room in v for the copy, at the sizes the state had as
// the audit began and a little more. Called without the lock, before
// Fill: Fill then appends without allocating, and so is not asked to
// help the collector (an assist) under the lock (docs/scale.md).
func (v *AuditView) Reserve() {
	v.Cookies = make([]uint64, 0, roomFor(v.sizes[0]))
	v.groups = make([]groupSig, 0, roomFor(v.sizes[1]))
	v.IDs = make([]uint32, 0, roomFor(v.sizes[2]))
}

// roomFor is n and a sixteenth more, for what commits add meanwhile.
func roomFor(n int) int { return n + n/16 + 64 }

// Fill copies the installed view into v, and the IDs of the groups
// wanted but not installed, with the driver's lock held, pausing (p)
// between slices. What a commit changes during a pause is marked, and
// EndAudit keeps the commits' view of it whatever the copy holds; every
// other entry is copied as it was when the audit began. Fill reports false
// when the audit was dropped during a pause (an Adopt: it would read
// older than the view now installed); the view is then incomplete, and
// nothing may be read into it.
func (v *AuditView) Fill(p *Pause) bool {
	s := v.state
	for c := range s.installedFlows {
		v.Cookies = append(v.Cookies, c)
		if p.Step() && !v.live() {
			return false
		}
	}
	for id, sig := range s.installedGroups {
		v.groups = append(v.groups, groupSig{id, sig})
		v.IDs = append(v.IDs, id)
		if p.Step() && !v.live() {
			return false
		}
	}
	for id := range s.groups {
		if _, ok := s.installedGroups[id]; !ok {
			v.IDs = append(v.IDs, id)
		}
		if p.Step() && !v.live() {
			return false
		}
	}
	return true
}

// live reports whether v's audit is still the state's.
func (v *AuditView) live() bool { return v.state.audit == v.marks }

// Prepare sorts the view after Fill. An entry a commit removed and added
// again while Fill paused can be listed twice: once is kept (a commit
// marked it, so EndAudit does not adopt what the audit read of it). It
// needs no lock.
func (v *AuditView) Prepare() {
	slices.Sort(v.Cookies)
	v.Cookies = slices.Compact(v.Cookies)
	slices.SortFunc(v.groups, groupSig.compare)
	v.groups = slices.CompactFunc(v.groups, func(a, b groupSig) bool { return a.id == b.id })
	slices.Sort(v.IDs)
	v.IDs = slices.Compact(v.IDs)
}

// Compare is where what the audit read (every flow with the driver's tag,
// or the flows of v.Cookies when it holds no other; the groups of v.IDs)
// differs from the view, after Prepare: each list sorted and walked
// beside the view's. It needs no lock.
func (v *AuditView) Compare(flows []ofconn.FlowInfo, groups []ofconn.GroupInfo) AuditDrift {
	d := AuditDrift{Flows: map[uint64]bool{}, Groups: map[uint32]GroupRead{}}
	read := make([]uint64, 0, len(flows))
	for _, f := range flows {
		if f.Cookie&of.CookieTagMask == of.CookieTag && !of.IsLearnedCookie(f.Cookie) {
			read = append(read, f.Cookie)
		}
	}
	slices.Sort(read) // the lookups' order already
	read = slices.Compact(read)
	walkSorted(v.Cookies, read, cmp.Compare[uint64], func(installed, held *uint64) {
		if installed == nil {
			d.Flows[*held] = true
		} else if held == nil {
			d.Flows[*installed] = false
		}
	})
	var got []groupSig
	for _, g := range groups {
		if _, asked := slices.BinarySearch(v.IDs, g.ID); asked {
			got = append(got, groupSig{g.ID, groupSignature(g.BucketIDs)})
		}
	}
	slices.SortFunc(got, groupSig.compare)
	got = slices.CompactFunc(got, func(a, b groupSig) bool { return a.id == b.id })
	walkSorted(v.groups, got, groupSig.compare, func(installed, held *groupSig) {
		if held == nil {
			d.Groups[installed.id] = GroupRead{}
		} else if installed == nil || installed.sig != held.sig {
			d.Groups[held.id] = GroupRead{Held: true, sig: held.sig}
		}
	})
	return d
}

// walkSorted walks two lists sorted by compare beside each other and
// calls visit for each element in either: with a's and b's (nil: not in
// that list).
func walkSorted[T any](a, b []T, compare func(T, T) int, visit func(inA, inB *T)) {
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && compare(a[0], b[0]) < 0:
			visit(&a[0], nil)
			a = a[1:]
		case len(a) == 0 || compare(a[0], b[0]) > 0:
			visit(nil, &b[0])
			b = b[1:]
		default:
			visit(&a[0], &b[0])
			a, b = a[1:], b[1:]
		}
	}
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
