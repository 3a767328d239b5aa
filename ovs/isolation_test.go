package ovs

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn/ofconntest"
)

// refuseOwner makes the bridge refuse every message about what owner
// wants now (its flows by cookie, its groups by ID), naming them or not.
func (md *memDriver) refuseOwner(owner engine.OwnerKey, unnamed bool) {
	defer md.lock()()
	ownCookies, ownGroups := md.m.State().Owned(owner)
	if len(ownCookies)+len(ownGroups) == 0 {
		md.t.Fatalf("no owner %q", owner)
	}
	cookies, groups := map[uint64]bool{}, map[uint32]bool{}
	for _, c := range ownCookies {
		cookies[c] = true
	}
	for _, g := range ownGroups {
		groups[g] = true
	}
	md.br.RefuseWhile(&ofconntest.Refusal{Unnamed: unnamed, Picks: func(cookie uint64, group uint32, isGroup bool) bool {
		return isGroup && groups[group] || !isGroup && cookies[cookie]
	}})
}

// convergedBut fails the test unless the bridge holds what the driver
// wants, but for owner's flows and groups, which it holds none of.
func (md *memDriver) convergedBut(owner engine.OwnerKey) {
	md.t.Helper()
	defer md.lock()()
	held := map[string]bool{}
	rendered := map[engine.OwnerKey]engine.Rendering{}
	ownCookies, ownGroups := md.m.State().Owned(owner)
	for _, c := range ownCookies {
		held[ofconntest.FlowDumpText(md.m.State().FlowOf(c, rendered))] = true
	}
	for _, id := range ownGroups {
		held[ofconntest.GroupDumpText(md.m.State().GroupOf(id, rendered))] = true
	}
	var want []string
	for _, l := range strings.SplitAfter(desiredDump(md.m.State()), "\n") {
		if !held[strings.TrimSuffix(l, "\n")] {
			want = append(want, l)
		}
	}
	if got := md.br.Dump(); got != strings.Join(want, "") {
		md.t.Fatalf("the bridge holds:\n%s\nwant everything but %s's:\n%s", got, owner, strings.Join(want, ""))
	}
}

// A service port whose messages OVS refuses, with or without naming
// them, is held back alone: in the same round the 10 000-endpoint
// dual-stack Service, 199 other Services and the static pipeline are
// programmed; it is reported once, as a Problem and as degraded; a change
// of another Service meanwhile goes through without it; and once OVS
// takes it again, the retry after the backoff programs it.
func TestOneRefusedServicePortStaysHeldAlone(t *testing.T) {
	for _, tc := range []struct {
		name, svc string
		unnamed   bool
	}{
		{"named", "svc-00042", false},
		{"unnamed", "svc-00042", true},
		{"the large one, named", "web", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, _ := largeCluster(10_000)
			md := newMemDriver(t, ofconntest.NewBridge(), tr)
			var name graph.ServicePortName
			for _, sp := range md.tr.Snapshot().ServicePorts {
				if sp.Name.Name == tc.svc {
					name = sp.Name
				}
			}
			unlock := md.lock()
			md.m.Sync(md.tr.Snapshot()) // what the owner wants, to refuse it
			unlock()
			owner := engine.ServicePortOwner(name)
			md.refuseOwner(owner, tc.unnamed)

			err := md.sync()
			var degraded *dataplanes.Degraded
			if !errors.As(err, &degraded) || len(degraded.Parts) != 1 || degraded.Parts[0].ServicePort != name {
				t.Fatalf("%v; want %s held back alone", err, name)
			}
			if len(err.Error()) > 2000 {
				t.Fatalf("the error is %d bytes long", len(err.Error()))
			}
			md.convergedBut(owner)
			if got, want := md.sink.reasons(), []string{"OVSRefused " + name.String()}; !slices.Equal(got, want) {
				t.Fatalf("problems %q, want %q", got, want)
			}

			// Another Service changes meanwhile: programmed at once.
			setSlice := func(svc string, ips ...string) {
				opts := []SliceOption{SlicePort("http", memTCP, 8080)}
				for _, ip := range ips {
					opts = append(opts, onNode("node-0", ip))
				}
				ns := "ns-" + svc[len(svc)-2:]
				tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice(ns, svc+"-abcde", svc, memV4, opts...)))
			}
			setSlice("svc-00007", "10.200.0.7")
			if err := md.apply(); !errors.As(err, &degraded) {
				t.Fatalf("%v; want %s still held back", err, name)
			}
			if !strings.Contains(md.br.Dump(), "10.200.0.7") {
				t.Fatal("another Service's change did not go through while one is held back")
			}

			// OVS takes it again: the next call after the backoff programs it.
			md.br.RefuseWhile(nil)
			md.later(dataplanes.HoldFirst)
			md.mustApply()
			md.converged()
			if got := md.sink.reasons(); len(got) != 1 {
				t.Fatalf("problems %q, want the one report", got)
			}
		})
	}
}
