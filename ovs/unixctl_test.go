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
	ctl, err := vswitchdControl(w.opts.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := unixctl(ctx, ctl, "version")
	if err != nil || !strings.Contains(v, "Open vSwitch") {
		t.Fatalf("version: %q, %v", v, err)
	}
	if err := w.d.settle(ctx); err != nil {
		t.Fatalf("settle: %v", err)
	}
	if _, err := unixctl(ctx, ctl, "no-such/command"); err == nil || !strings.Contains(err.Error(), "no-such/command") {
		t.Fatalf("unknown command: %v, want an error naming it", err)
	}
}
