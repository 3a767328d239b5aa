//go:build linux

package ovs

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestUnixctlTalksToVswitchd(t *testing.T) {
	w := newWorld(t)
	c := &ctlConn{runDir: w.opts.RunDir}
	defer c.close()
	deadline := time.Now().Add(5 * time.Second)
	v, err := c.call(deadline, "version")
	if err != nil || !strings.Contains(v, "Open vSwitch") {
		t.Fatalf("version: %q, %v", v, err)
	}
	if _, err := c.call(deadline, "no-such/command"); err == nil || !strings.Contains(err.Error(), "no-such/command") {
		t.Fatalf("unknown command: %v, want an error naming it", err)
	}
	// An error answer leaves the kept connection usable.
	if v, err := c.call(deadline, "version"); err != nil || v == "" {
		t.Fatalf("version after an error: %q, %v", v, err)
	}

	// The revalidator wait: armed, answered; a dropped control connection
	// (ovs-vswitchd restarted) is dialled again by the next arm; waiting
	// unarmed is an error, not a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s := newSettler(w.opts.RunDir)
	defer s.close()
	for i := range 2 {
		if err := s.arm(); err != nil {
			t.Fatalf("arm %d: %v", i, err)
		}
		if err := s.arm(); err == nil {
			t.Fatalf("arming twice: no error")
		}
		if err := s.wait(ctx, c); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
		s.waitConn.conn.Close() // the next arm must notice and dial again
	}
	if err := s.wait(ctx, c); err == nil {
		t.Fatal("wait without arm: no error")
	}
}
