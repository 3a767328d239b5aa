//go:build linux

package ofconntest

import (
	"antrea.io/ofnet/ofctrl"
	"context"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"testing"
	"time"

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
