//go:build linux

package ofconntest

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"antrea.io/ofnet/ofctrl"
	gocmp "github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// TestOVSFollowsTheMemBridgeRules holds a real OVS to the cases the
// in-memory bridge follows (bridgeRules): the same answers (accepted, or
// refused with the same OpenFlow error, when added or when committed) and
// the same flows and groups afterwards. It is what makes the in-memory
// bridge's strictness OVS's, not a guess.
func TestOVSFollowsTheMemBridgeRules(t *testing.T) {
	o := ovstest.Start(t)
	o.AddBridge("br-rules")
	c := ofconn.Dial(o.MgmtSocket("br-rules"), ignoring{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range bridgeRules() {
		t.Run(r.name, func(t *testing.T) {
			o.Ofctl("del-flows", "br-rules")
			o.Ofctl("del-groups", "br-rules")
			checkRule(t, c, r)
		})
	}
}

// ignoring is an ofconn.Handler that does nothing: WaitReady tells when
// the connection is up.
type ignoring struct{}

func (ignoring) Connected(int)             {}
func (ignoring) PacketIn(*ofctrl.PacketIn) {}

// TestFlowReadsAgreeWithOVS holds a real OVS and the in-memory bridge to
// the same answers for the flow reads the driver's audit makes: flows
// looked up by cookie (one absent), a count of the pipeline's flows and of
// the learned ones, and a slice of every flow with the tag.
func TestFlowReadsAgreeWithOVS(t *testing.T) {
	flows := []*of.Flow{
		flowIn(0, 100, []of.Match{of.InPort(1)}, of.Output(2)),
		flowIn(0, 90, []of.Match{of.InPort(2)}, of.Output(1)),
		flowIn(3, 100, nil, of.Output(2)),
		flowIn(6, 200, []of.Match{of.EthType(of.EthIPv4), tcp, of.L4Dst{Proto: of.ProtoTCP, Port: 80}}),
	}
	o := ovstest.Start(t)
	o.AddBridge("br-reads")
	real := ofconn.Dial(o.MgmtSocket("br-reads"), ignoring{})
	defer real.Close()
	mem := InMemory(NewBridge())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := real.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	type answers struct {
		LookedUp          []ofconn.FlowInfo
		Pipeline, Learned int
		Slice             []ofconn.FlowInfo
	}
	read := func(c *ofconn.Conn) answers {
		t.Helper()
		if err := c.Commit(ctx, &ofconn.Batch{FlowAdds: flows}, nil); err != nil {
			t.Fatal(err)
		}
		var a answers
		var err error
		absent := flows[0].Cookie() ^ 1
		if a.LookedUp, err = c.DescribeFlows(ctx, []uint64{flows[3].Cookie(), absent, flows[1].Cookie()}, ofconn.Paced{Chunk: 2}); err != nil {
			t.Fatal(err)
		}
		pipeline, mask := of.PipelineCookies()
		if a.Pipeline, err = c.CountFlows(ctx, pipeline, mask); err != nil {
			t.Fatal(err)
		}
		if a.Learned, err = c.CountFlows(ctx, of.CookieTag|of.CookieKindLearn, mask); err != nil {
			t.Fatal(err)
		}
		cookie, mask := of.CookieSlice(0, 1)
		if a.Slice, err = c.DumpFlows(ctx, cookie, mask, 0); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(a.Slice, func(x, y ofconn.FlowInfo) int { return cmp.Compare(x.Cookie, y.Cookie) })
		return a
	}
	want := read(mem)
	if len(want.LookedUp) != 2 || want.Pipeline != len(flows) || want.Learned != 0 {
		t.Fatalf("the in-memory bridge answered %+v: want the two flows looked up and %d counted", want, len(flows))
	}
	if diff := gocmp.Diff(want, read(real)); diff != "" {
		t.Errorf("OVS answered otherwise than the in-memory bridge (-memory +OVS):\n%s", diff)
	}
}
