package ovsdbtest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
)

// Our client against the in-memory server: a bridge and two ports made,
// each plugged by the ovs-vswitchd stand-in with its own port number and
// MAC; one deleted is gone; a bridge's deletion takes its ports along.
func TestClientAgainstTheInMemoryServer(t *testing.T) {
	_, c, ctx := startWithClient(t)
	var err error
	if err := c.EnsureBridge(ctx, "br-sy", "netdev"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []ovsdb.PortSpec{{Name: "sy-gw0", Type: "internal"}, {Name: "sypaaa", ExternalIDs: map[string]string{"switchyard.io/pod": "ns/p"}}} {
		if err := c.AddPort(ctx, "br-sy", p); err != nil {
			t.Fatal(err)
		}
	}
	var got []ovsdb.Interface
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if got, err = c.Interfaces(ctx, "br-sy"); err != nil {
			t.Fatal(err)
		}
		plugged := len(got) == 3
		for _, i := range got {
			plugged = plugged && i.OFPort > 0 && i.MAC != ""
		}
		if plugged || time.Now().After(deadline) {
			break
		}
	}
	ports := map[string]int{}
	for _, i := range got {
		ports[i.Name] = i.OFPort
	}
	if ports["br-sy"] != 65534 || ports["sy-gw0"] < 1 || ports["sypaaa"] < 1 || ports["sy-gw0"] == ports["sypaaa"] || len(ports) != 3 {
		t.Fatalf("port numbers %v, want the bridge's local port 65534 and two others of their own", ports)
	}
	if err := c.DeletePort(ctx, "br-sy", "sypaaa"); err != nil {
		t.Fatal(err)
	}
	if got, err = c.Interfaces(ctx, "br-sy"); err != nil || len(got) != 2 || got[0].Name == "sypaaa" || got[1].Name == "sypaaa" {
		t.Fatalf("after the delete: %+v, %v; want br-sy and sy-gw0", got, err)
	}
	if owned, empty, err := c.BridgeOwnedAndEmpty(ctx, "br-sy"); err != nil || !owned || empty {
		t.Fatalf("BridgeOwnedAndEmpty = %v, %v, %v; want owned, not empty", owned, empty, err)
	}
	if err := c.SetInterfaceExternalIDs(ctx, "sy-gw0", map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	i, ok, err := c.Interface(ctx, "sy-gw0")
	if err != nil || !ok {
		t.Fatalf("Interface: %v %v", ok, err)
	}
	if d := cmp.Diff(map[string]string{"k": "v"}, i.ExternalIDs); d != "" {
		t.Errorf("external_ids (-want +got):\n%s", d)
	}
}

// startWithClient starts a server for the test and connects our client
// to it; both go when the test ends.
func startWithClient(t *testing.T) (*Server, *ovsdb.Client, context.Context) {
	t.Helper()
	s := Start(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c, err := ovsdb.Connect(ctx, s.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return s, c, ctx
}
