package ovs

import (
	"context"
	"testing"

	"antrea.io/libOpenflow/openflow15"
	"antrea.io/ofnet/ofctrl"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn/ofconntest"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

// Without root, on the in-memory bridge (through which no packet goes):
// every service port with endpoints is counted, at 0 for each endpoint;
// a reject packet-in counts for the service port whose flow sent it, also
// past the packet-in rate limit; one whose cookie is no service port's
// counts for none.
func TestCountersWithoutTraffic(t *testing.T) {
	br := ofconntest.NewBridge()
	md := newMemDriver(t, br, memCluster())
	md.mustSync()
	empty := graph.ServicePortName{Namespace: "ns", Name: "empty", Port: "http", Protocol: graph.TCP}
	unlock := md.lock()
	cookies, _ := md.m.State().Owned(engine.ServicePortOwner(empty))
	unlock()
	if len(cookies) == 0 {
		t.Fatal("the empty Service's port owns no flow")
	}
	md.d.limiter.SetBurst(0) // no answer is sent; the reject still counts
	for _, cookie := range []uint64{cookies[0], cookies[0], 0x1} {
		pi := openflow15.NewPacketIn()
		pi.Cookie = cookie
		md.d.PacketIn(&ofctrl.PacketIn{PacketIn: pi, UserData: []byte{pipeline.PacketInReject}})
	}
	counts, err := md.d.Counters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c := counts[empty]; c.Rejected != 2 || c.Connections != 0 {
		t.Errorf("ns/empty: %+v; want 2 rejected", c)
	}
	endpoints := 0
	for sp, c := range counts {
		if c.Connections != 0 {
			t.Errorf("%s: %d connections through an in-memory bridge", sp, c.Connections)
		}
		endpoints += len(c.Endpoints)
	}
	if endpoints == 0 {
		t.Error("no endpoint is counted (at 0)")
	}
}
