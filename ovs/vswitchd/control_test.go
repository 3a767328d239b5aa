//go:build linux

package vswitchd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// On a private ovs-vswitchd: requests and error answers over one kept
// connection; the revalidator wait armed, answered, dialled again after
// the connection dropped; waiting unarmed is an error, not a hang.
func TestControlTalksToVswitchd(t *testing.T) {
	o := ovstest.Start(t)
	// The revalidator wait needs one datapath: the userspace one, made
	// with the first netdev bridge.
	o.AddBridge("br-ctl")
	c := NewControl(o.Dir)
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	v, err := c.Call(deadline, "version")
	if err != nil || !strings.Contains(v, "Open vSwitch") {
		t.Fatalf("version: %q, %v", v, err)
	}
	if _, err := c.Call(deadline, "no-such/command"); err == nil || !strings.Contains(err.Error(), "no-such/command") {
		t.Fatalf("unknown command: %v, want an error naming it", err)
	}
	// An error answer leaves the kept connection usable.
	if v, err := c.Call(deadline, "version"); err != nil || v == "" {
		t.Fatalf("version after an error: %q, %v", v, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f := NewFollower(o.Dir, c)
	defer f.Close()
	for i := range 2 {
		if err := f.arm(); err != nil {
			t.Fatalf("arm %d: %v", i, err)
		}
		if err := f.arm(); err == nil {
			t.Fatalf("arming twice: no error")
		}
		if err := f.wait(ctx); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
		f.waitConn.conn.Close() // the next arm must notice and dial again
	}
	if err := f.wait(ctx); err == nil {
		t.Fatal("wait without arm: no error")
	}
}
