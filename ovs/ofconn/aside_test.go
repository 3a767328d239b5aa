//go:build linux

package ofconn

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// On a real OVS, the audit's reads over the aside connection read what
// the whole dumps read: the flows of every cookie slice together are the
// flows with the tag, each once, at every slicing; the groups asked by ID
// (in pipelined chunks, an ID the bridge lacks among them) are the ones
// a dump of every group lists. A bundle on the main connection is taken
// while the aside one is open.
func TestAsideReadsEqualTheWholeDumps(t *testing.T) {
	_, c, ctx := dialedBridge(t, 60*time.Second)
	var b Batch
	var ids []uint32
	for i := range 600 {
		g := &of.Group{ID: 0x59000000 + uint32(i), Buckets: of.BucketList{{of.Output(uint32(i%7 + 1))}, {of.Output(9)}}}
		b.GroupAdds = append(b.GroupAdds, g)
		ids = append(ids, g.ID)
		b.FlowAdds = append(b.FlowAdds, &of.Flow{Table: 3, Priority: 100, Goto: -1,
			Match:   []of.Match{of.EthType(of.EthIPv4), of.IPProto(of.ProtoTCP), of.L4Dst{Proto: of.ProtoTCP, Port: uint16(1000 + i)}},
			Actions: []of.Action{of.ToGroup(g.ID)}})
	}
	if err := c.Commit(ctx, &b, nil); err != nil {
		t.Fatal(err)
	}
	whole, err := c.DumpFlows(ctx, of.CookieTag, of.CookieTagMask, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) != 600 {
		t.Fatalf("the whole dump read %d flows, want 600", len(whole))
	}
	aside := c.Aside()
	byCookie := func(a, b FlowInfo) int { return cmpUint(a.Cookie, b.Cookie) }
	for _, bits := range []int{0, 1, 4, 8} {
		var got []FlowInfo
		for i := range 1 << bits {
			cookie, mask := of.CookieSlice(i, bits)
			part, err := aside.DumpFlows(ctx, cookie, mask, 0)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, part...)
		}
		if diff := cmp.Diff(slices.SortedFunc(slices.Values(whole), byCookie), slices.SortedFunc(slices.Values(got), byCookie)); diff != "" {
			t.Errorf("%d slices: (-whole dump +slices)\n%s", 1<<bits, diff)
		}
	}
	cookies := make([]uint64, 0, len(whole)+1)
	for _, f := range whole {
		cookies = append(cookies, f.Cookie)
	}
	slices.Sort(cookies)
	cookies = slices.Insert(cookies, 300, cookies[300]^1) // one the bridge lacks
	for _, chunk := range []int{1, 7, 256, 1000} {
		got, err := aside.DescribeFlows(ctx, cookies, Paced{Chunk: chunk})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(slices.SortedFunc(slices.Values(whole), byCookie), got); diff != "" { // asked in order
			t.Errorf("flows looked up by cookie in chunks of %d: (-whole dump +looked up)\n%s", chunk, diff)
		}
	}
	pipeline, mask := of.PipelineCookies()
	if n, err := aside.CountFlows(ctx, pipeline, mask); err != nil || n != len(whole) {
		t.Errorf("counted %d pipeline flows (%v), want the whole dump's %d", n, err, len(whole))
	}
	allGroups, err := c.DumpGroups(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	byID := func(a, b GroupInfo) int { return cmpUint(uint64(a.ID), uint64(b.ID)) }
	slices.SortFunc(allGroups, byID)                     // OVS lists them in its own order
	asked := append(slices.Clone(ids[:300]), 0x5900ffff) // one the bridge lacks
	asked = append(asked, ids[300:]...)
	for _, chunk := range []int{1, 7, 128, 1000} {
		got, err := aside.DescribeGroups(ctx, asked, Paced{Chunk: chunk, Pause: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(allGroups, got); diff != "" { // asked in order
			t.Errorf("groups asked by ID in chunks of %d: (-dump of all +asked)\n%s", chunk, diff)
		}
	}
	// The main connection still commits while the aside one is open.
	if err := c.Commit(ctx, &Batch{GroupDeletes: ids[:1]}, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := aside.DescribeGroups(ctx, ids[:2], Paced{Chunk: 128}); err != nil || len(got) != 1 || got[0].ID != ids[1] {
		t.Fatalf("after deleting group %d, asking for it and the next: %+v, %v", ids[0], got, err)
	}
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// dialedBridge starts a private OVS with a bridge br-a and returns a
// ready connection to it (closed when the test ends) and a context of
// timeout.
func dialedBridge(t *testing.T, timeout time.Duration) (*ovstest.OVS, *Conn, context.Context) {
	t.Helper()
	o := ovstest.Start(t)
	o.AddBridge("br-a")
	c := Dial(o.MgmtSocket("br-a"), &nopHandler{connected: make(chan struct{}, 1)})
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return o, c, ctx
}

// The switch's software description is its version, as the daemon itself
// tells it.
func TestSoftwareVersionIsOVSs(t *testing.T) {
	o, c, ctx := dialedBridge(t, 10*time.Second)
	got, err := c.SoftwareVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := o.Version()
	if got != want {
		t.Errorf("software version %q, want %q (ovs-appctl version)", got, want)
	}
}
