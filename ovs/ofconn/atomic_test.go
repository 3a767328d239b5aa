//go:build linux

package ofconn

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

func TestBundleIsAllOrNothing(t *testing.T) {
	o, c, ctx := dialedBridge(t, 20*time.Second)
	good := &of.Flow{Table: 3, Priority: 10, Goto: -1, Actions: []of.Action{of.Output(1)}}
	bad := &of.Flow{Table: 3, Priority: 20, Goto: -1, Match: []of.Match{of.InPort(7)}, Actions: []of.Action{of.ToGroup(424242)}} // no such group
	b := Batch{FlowAdds: []*of.Flow{good, bad}}
	err := c.Commit(ctx, &b, nil)
	var refused *RefusedError
	if !errors.As(err, &refused) || !slices.Equal(refused.Indexes, []int{1}) || !strings.Contains(err.Error(), "group:424242") {
		t.Fatalf("a bundle with a flow naming a missing group: %v, want it refused naming the flow", err)
	}
	if out := o.Ofctl("dump-flows", "br-a", "table=3"); strings.Contains(out, "priority=10") {
		t.Fatalf("the valid flow of the failed bundle was installed:\n%s", out)
	}
	if got := c.Stats(); got.Bundles != 0 {
		t.Fatalf("a failed bundle was counted: %+v", got)
	}

	// The connection is still usable afterwards.
	ok := Batch{FlowAdds: []*of.Flow{good}}
	if err := c.Commit(ctx, &ok, nil); err != nil {
		t.Fatal(err)
	}
	if out := o.Ofctl("dump-flows", "br-a", "table=3"); !strings.Contains(out, "priority=10") {
		t.Fatalf("the valid flow is missing after a good bundle:\n%s", out)
	}
}
