package ovs

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn/ofconntest"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// These tests run the driver's OpenFlow side on an in-memory bridge
// (memharness_test.go): no root, no OVS. The in-memory bridge refuses what
// OVS refuses (ofconntest.Bridge), so a bundle OVS would refuse fails here
// too.

// A full sync installs exactly what the driver wants; a full resync and
// an empty change of an unchanged graph send nothing.
func TestUnchangedResyncSendsNothing(t *testing.T) {
	md := newMemDriver(t, ofconntest.NewBridge(), memCluster())
	md.mustSync()
	md.converged()
	first := md.br.Counts()
	if first.Bundles != 1 || first.FlowMods < 80 || first.GroupMods < 7 {
		t.Fatalf("the first sync committed %+v, want one bundle with every flow and group", first)
	}
	md.mustSync()
	md.mustApply()
	if got := mods(first, md.br.Counts()); got != (ofconntest.Counts{}) {
		t.Fatalf("an unchanged resync and apply sent %+v, want nothing", got)
	}
}

// One endpoint changing is one group modification and no flow; with
// ClientIP affinity, plus the DNAT flow of the endpoint that came.
func TestOneEndpointChangeIsOneGroupModInMemory(t *testing.T) {
	for _, tc := range []struct {
		svc      string
		ips      []string
		flowMods int
	}{
		{"web", []string{"10.244.1.5", "10.244.1.6"}, 0},                // one gone
		{"web", []string{"10.244.1.5", "10.244.1.6", "10.244.1.99"}, 0}, // one came
		{"sticky", []string{"10.244.1.9", "10.244.1.98"}, 2},            // one came, one went: their DNAT flows
	} {
		t.Run(tc.svc+"/"+strings.Join(tc.ips, ","), func(t *testing.T) {
			md := newMemDriver(t, ofconntest.NewBridge(), memCluster())
			md.mustSync()
			before := md.br.Counts()
			setEndpoints(md.tr, tc.svc, tc.ips...)
			md.mustApply()
			md.converged()
			if got := mods(before, md.br.Counts()); got != (ofconntest.Counts{Bundles: 1, GroupMods: 1, FlowMods: tc.flowMods}) {
				t.Fatalf("sent %+v, want one bundle: one group mod, %d flow mods", got, tc.flowMods)
			}
		})
	}
}

// A restarted driver (a new one on the same bridge) adopts what the last
// one installed: it sends nothing for an unchanged graph, and the same
// one group modification for a change afterwards (group IDs are stable).
func TestRestartAdoptsWithoutMods(t *testing.T) {
	br := ofconntest.NewBridge()
	newMemDriver(t, br, memCluster()).mustSync()
	before := br.Counts()
	md := newMemDriver(t, br, memCluster())
	md.mustSync()
	md.converged()
	if got := mods(before, br.Counts()); got != (ofconntest.Counts{}) {
		t.Fatalf("the restarted driver sent %+v, want nothing", got)
	}
	if n := md.keptNeedlessly(); n != 0 {
		t.Errorf("after adopting, %d flows and groups are kept that their service port renders again", n)
	}
	setEndpoints(md.tr, "web", "10.244.1.5")
	md.mustApply()
	if got := mods(before, br.Counts()); got != (ofconntest.Counts{Bundles: 1, GroupMods: 1}) {
		t.Fatalf("a change after the restart sent %+v, want one group mod", got)
	}
	md.converged()
}

// A restart onto a release whose buckets' IDs differ for the same
// actions (before 2026-11-30 they were hashes of the actions' encoding;
// now of what the bucket is made of: docs/ovs.md) modifies every group
// once, adopts every flow, and then holds what it wants.
func TestRestartOntoOtherBucketIDsModifiesEachGroupOnce(t *testing.T) {
	br := ofconntest.NewBridge()
	first := newMemDriver(t, br, memCluster())
	first.mustSync()
	var old []*of.Group // the same groups, IDs hashed from their encoding
	func() {
		defer first.lock()()
		rendered := map[engine.OwnerKey]engine.Rendering{}
		for _, name := range first.m.ServicePortNames() {
			_, ids := first.m.State().Owned(engine.ServicePortOwner(name))
			for _, id := range ids {
				g := first.m.State().GroupOf(id, rendered)
				list := make(of.BucketList, g.Buckets.Len())
				for i := range list {
					list[i] = g.Buckets.Bucket(i)
				}
				if slices.Equal((&of.Group{Buckets: list}).BucketIDs(), g.BucketIDs()) {
					t.Fatalf("group %d: the encoding's hashes give the same bucket IDs as the keys", id)
				}
				old = append(old, &of.Group{ID: id, Buckets: list, HashFields: g.HashFields})
			}
		}
	}()
	if len(old) < 4 {
		t.Fatalf("the cluster has %d groups, want at least 4", len(old))
	}
	if err := br.Apply(&ofconn.Batch{GroupModifies: old}); err != nil {
		t.Fatal(err)
	}
	before := br.Counts()
	md := newMemDriver(t, br, memCluster())
	md.mustSync()
	md.converged()
	if got, want := mods(before, br.Counts()), (ofconntest.Counts{Bundles: 1, GroupMods: len(old)}); got != want {
		t.Fatalf("the restart sent %+v, want %+v (each group modified once, no flow)", got, want)
	}
}

// A bundle that fails leaves the driver's view consistent: the retry
// reads the bridge back and converges, whether nothing was applied (lost
// before the commit: an error, the runner retries), everything was (lost
// after it), or the bridge held something else (a group deleted behind
// the driver's back, with the flows sending to it, so OVS refuses the
// modification: the service port is held back, and its retry after the
// backoff reads the bridge back first); and a resync afterwards sends
// nothing.
func TestFailedBundleIsRetriedToConvergence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(md *memDriver)
		held   bool
	}{
		{"connection lost before the commit", func(md *memDriver) { md.br.FailNext(ofconntest.LoseBeforeCommit) }, false},
		{"connection lost after the commit", func(md *memDriver) { md.br.FailNext(ofconntest.LoseAfterCommit) }, false},
		{"group deleted behind the driver's back", func(md *memDriver) {
			if err := md.br.Apply(&ofconn.Batch{GroupDeletes: md.groupsOf("ns/web:http/TCP")}); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := newMemDriver(t, ofconntest.NewBridge(), memCluster())
			md.mustSync()
			setEndpoints(md.tr, "web", "10.244.1.5")
			tc.break_(md)
			err := md.apply()
			var degraded *dataplanes.Degraded
			switch {
			case err == nil:
				t.Fatal("the change went through; want it to fail")
			case errors.As(err, &degraded) != tc.held:
				t.Fatalf("%v; want the service port held back: %v", err, tc.held)
			}
			if tc.held {
				md.later(dataplanes.HoldFirst) // when the runner calls again
			}
			md.mustApply() // the runner's retry
			md.converged()
			before := md.br.Counts()
			md.mustSync()
			if got := mods(before, md.br.Counts()); got != (ofconntest.Counts{}) {
				t.Fatalf("a resync after the retry sent %+v, want nothing", got)
			}
		})
	}
}

// keptNeedlessly counts the committed flows and groups the state still
// keeps though their owner renders them again (rerender.go).
func (md *memDriver) keptNeedlessly() int {
	defer md.lock()()
	_, _, needless := md.m.State().Retained()
	return needless
}

// groupsOf lists a service port's groups.
func (md *memDriver) groupsOf(name string) []uint32 {
	defer md.lock()()
	_, groups := md.m.State().Owned(engine.OwnerKey("sp/" + name)) // ServicePortOwner's form
	if len(groups) == 0 {
		md.t.Fatalf("no groups of service port %s", name)
	}
	return groups
}

// A refused message holds back the service port it is of, named with
// what OVS said (the group by ID and size, not its buckets), once as a
// Problem; the rest of the round is programmed.
func TestRefusalNamesTheMessage(t *testing.T) {
	md := newMemDriver(t, ofconntest.NewBridge(), memCluster())
	md.mustSync()
	if err := md.br.Apply(&ofconn.Batch{GroupDeletes: md.groupsOf("ns/web:http/TCP")}); err != nil {
		t.Fatal(err)
	}
	setEndpoints(md.tr, "web", "10.244.1.6")
	setEndpoints(md.tr, "np", "10.244.1.7", "10.244.1.77")
	err := md.apply()
	var degraded *dataplanes.Degraded
	if !errors.As(err, &degraded) || len(degraded.Parts) != 1 || degraded.Parts[0].ServicePort.String() != "ns/web:http/TCP" ||
		!strings.Contains(degraded.Parts[0].Message, "OFPGMFC_UNKNOWN_GROUP") || !strings.Contains(degraded.Parts[0].Message, "modify group 0x") {
		t.Fatalf("%v, want ns/web held back, its group modification refused as an unknown group", err)
	}
	if !strings.Contains(md.br.Dump(), "10.244.1.77") {
		t.Fatal("the other Service's change in the same round is not in the bridge")
	}
	md.apply()
	if got := md.sink.reasons(); !slices.Equal(got, []string{"OVSRefused ns/web:http/TCP"}) {
		t.Fatalf("problems %q, want ns/web reported once", got)
	}
}

// What the driver no longer keeps after a commit (a service port's flows
// and groups, rendered again when needed) is rendered as it was set: a
// bridge emptied behind the driver's back, after the pipeline's
// configuration changed (another gateway port) and an endpoint changed,
// is repaired to exactly what a fresh driver installs for the same state.
func TestWipedBridgeIsRepairedFromWhatIsRenderedAgain(t *testing.T) {
	br := ofconntest.NewBridge()
	md := newMemDriver(t, br, memCluster())
	md.mustSync()
	setEndpoints(md.tr, "web", "10.244.1.5", "10.244.1.99")
	setEndpoints(md.tr, "sticky", "10.244.1.9", "10.244.1.98")
	md.mustApply()

	unlock := md.lock()
	retained, _, _ := md.m.State().Retained()
	released := len(md.m.State().DesiredFlows()) - retained
	wipe := &ofconn.Batch{FlowDeletes: []ofconn.CookieMatch{{Cookie: of.CookieTag, Mask: of.CookieTagMask}},
		GroupDeletes: md.m.State().DesiredGroups()}
	unlock()
	if released == 0 {
		t.Fatal("no committed flow was released: the test would not render anything again")
	}
	if err := br.Apply(wipe); err != nil {
		t.Fatal(err)
	}
	before := br.Counts()
	md.mustSync()
	md.converged()
	if got := mods(before, br.Counts()); got.GroupMods != len(wipe.GroupDeletes) {
		t.Errorf("the repair sent %+v, want every group (%d) again", got, len(wipe.GroupDeletes))
	}

	fresh := ofconntest.NewBridge()
	other := newMemDriver(t, fresh, memCluster())
	setEndpoints(other.tr, "web", "10.244.1.5", "10.244.1.99")
	setEndpoints(other.tr, "sticky", "10.244.1.9", "10.244.1.98")
	other.mustSync()
	if got, want := br.Dump(), fresh.Dump(); got != want {
		t.Fatalf("the repaired bridge holds:\n%s\na fresh driver installs:\n%s", got, want)
	}
}

// The real Sync and Apply bring the host along with the bridge: after the
// first sync it holds the node's gateway configuration and a route for
// each ClusterIP; a Service deleted is an incremental update that
// withdraws its route (the fake refuses withdrawing what was never routed)
// and leaves the others.
func TestHostFollowsTheGraph(t *testing.T) {
	md := newMemDriver(t, ofconntest.NewBridge(), memCluster())
	md.mustSync()
	routed := func(ip string) bool {
		a := netip.MustParseAddr(ip)
		for dst := range md.host.State().Routes {
			if dst.Contains(a) {
				return true
			}
		}
		return false
	}
	if st := md.host.State(); st.Config.Gateway != md.d.opts.GatewayInterface || len(st.Config.Addresses) == 0 {
		t.Fatalf("the host's configuration %+v, want the gateway %s with its addresses", st.Config, md.d.opts.GatewayInterface)
	}
	for _, ip := range []string{"10.96.0.10", "10.96.0.11", "fd00:96::15"} {
		if !routed(ip) {
			t.Fatalf("no route for ClusterIP %s: %v", ip, md.host.State().Routes)
		}
	}
	md.tr.DeleteService("ns", "web")
	md.mustApply()
	if routed("10.96.0.10") || !routed("10.96.0.11") {
		t.Fatalf("after deleting ns/web: routes %v, want 10.96.0.10's gone and 10.96.0.11's kept", md.host.State().Routes)
	}
}
