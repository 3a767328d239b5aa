package ovsdbtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb/vswitch"
)

// zonesOf reads the datapath type's zones: each zone's timeouts and
// whether it is switchyard's.
type zone struct {
	Ours     bool
	Timeouts map[string]int
}

func zonesOf(t *testing.T, ctx context.Context, c client.Client, dpType string) map[int]zone {
	t.Helper()
	var roots []vswitch.OpenvSwitch
	if err := c.List(ctx, &roots); err != nil || len(roots) != 1 {
		t.Fatalf("root row: %v, %v", roots, err)
	}
	u, ok := roots[0].Datapaths[dpType]
	if !ok {
		return nil
	}
	dp := &vswitch.Datapath{UUID: u}
	if err := c.Get(ctx, dp); err != nil {
		t.Fatal(err)
	}
	out := map[int]zone{}
	for n, zu := range dp.CTZones {
		z := &vswitch.CTZone{UUID: zu}
		if err := c.Get(ctx, z); err != nil {
			t.Fatal(err)
		}
		got := zone{Ours: z.ExternalIDs[ovsdb.OwnerKey] == "true"}
		if z.TimeoutPolicy != nil {
			tp := &vswitch.CTTimeoutPolicy{UUID: *z.TimeoutPolicy}
			if err := c.Get(ctx, tp); err != nil {
				t.Fatal(err)
			}
			got.Timeouts = tp.Timeouts
		}
		out[n] = got
	}
	return out
}

// Zone timeouts on the in-memory server: created with the datapath row;
// changed timeouts updated; a zone with another component's policy left
// alone and named; removal takes ours only.
func TestZoneTimeouts(t *testing.T) {
	s, c, ctx := startWithClient(t)
	dbModel, err := vswitch.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	reader, err := client.NewOVSDBClient(dbModel, client.WithEndpoint("unix:"+s.Socket))
	if err != nil {
		t.Fatal(err)
	}
	if err := reader.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, err := reader.MonitorAll(ctx); err != nil {
		t.Fatal(err)
	}
	settled := func(want map[int]zone) {
		t.Helper()
		var got map[int]zone
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if got = zonesOf(t, ctx, reader, "netdev"); cmp.Equal(got, want) {
				return
			}
		}
		t.Fatalf("zones (-want +got):\n%s", cmp.Diff(want, got))
	}

	closeWait := map[string]int{"tcp_time_wait": 120, "tcp_close": 120}
	if err := c.EnsureZoneTimeouts(ctx, "netdev", []int{10, 11}, closeWait); err != nil {
		t.Fatal(err)
	}
	settled(map[int]zone{10: {true, closeWait}, 11: {true, closeWait}})
	if err := c.EnsureZoneTimeouts(ctx, "netdev", []int{10, 11}, closeWait); err != nil {
		t.Fatalf("again, unchanged: %v", err)
	}

	// Another component's zone 12, then timeouts changed for 10 to 12.
	theirs := map[string]int{"udp_single": 5}
	foreignZone(t, ctx, reader, 12, theirs)
	shorter := map[string]int{"tcp_time_wait": 60, "tcp_close": 60}
	err = c.EnsureZoneTimeouts(ctx, "netdev", []int{10, 11, 12, 13}, shorter)
	if err == nil || !strings.Contains(err.Error(), "[12]") {
		t.Fatalf("err %v, want zone 12 named as another's", err)
	}
	settled(map[int]zone{10: {true, shorter}, 11: {true, shorter}, 12: {false, theirs}, 13: {true, shorter}})

	if err := c.RemoveZoneTimeouts(ctx, "netdev", []int{10, 11, 12, 13}); err != nil {
		t.Fatal(err)
	}
	settled(map[int]zone{12: {false, theirs}})
}

// foreignZone adds zone n with a policy that is not switchyard's to the
// netdev datapath.
func foreignZone(t *testing.T, ctx context.Context, c client.Client, n int, timeouts map[string]int) {
	t.Helper()
	var roots []vswitch.OpenvSwitch
	if err := c.List(ctx, &roots); err != nil || len(roots) != 1 {
		t.Fatal(err)
	}
	tp := &vswitch.CTTimeoutPolicy{UUID: "their_tp", Timeouts: timeouts}
	z := &vswitch.CTZone{UUID: "their_zone", TimeoutPolicy: &tp.UUID}
	var ops []libovsdb.Operation
	for _, m := range []model.Model{tp, z} {
		o, err := c.Create(m)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, o...)
	}
	dp := &vswitch.Datapath{UUID: roots[0].Datapaths["netdev"]}
	o, err := c.Where(dp).Mutate(dp, model.Mutation{Field: &dp.CTZones, Mutator: libovsdb.MutateOperationInsert, Value: map[int]string{n: z.UUID}})
	if err != nil {
		t.Fatal(err)
	}
	if err := transact(ctx, c, append(ops, o...)); err != nil {
		t.Fatal(err)
	}
}
