package ovs

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"

	"github.com/switchyard-proxy/switchyard/internal/instancelock"
	"github.com/switchyard-proxy/switchyard/ovs/hostnet"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
)

// The driver reaches its dataplane through three narrow interfaces, each
// with an in-memory implementation as strict as the real one, so that
// tests without root run the real Sync, Apply, adoption and pod-port
// paths (memharness_test.go):
//   - the bridge's flows and groups: an *ofconn.Conn, over ovs-vswitchd's
//     socket (ofconn.Dial) or an in-memory bridge (ofconntest.InMemory);
//   - the port database: portDatabase, an ovs/ovsdb.Client over
//     ovsdb-server's socket or libovsdb's in-memory server
//     (ovs/ovsdb/ovsdbtest);
//   - the host: hostNetwork, an ovs/hostnet.Host or an in-memory host
//     (ovs/hostnet/hostnettest).

// portDatabase is what the driver asks of OVSDB.
type portDatabase interface {
	EnsureBridge(ctx context.Context, name, dpType string) error
	BridgeExists(ctx context.Context, bridge string) (bool, error)
	BridgeDatapathType(ctx context.Context, name string) (string, error)
	BridgeOwnedAndEmpty(ctx context.Context, name string) (owned, empty bool, err error)
	DeleteBridge(ctx context.Context, name string) error
	AddPort(ctx context.Context, bridge string, p ovsdb.PortSpec) error
	DeletePort(ctx context.Context, bridge, name string) error
	Interfaces(ctx context.Context, bridge string) ([]ovsdb.Interface, error)
	SetInterfaceExternalIDs(ctx context.Context, name string, ids map[string]string) error
	EnsureZoneTimeouts(ctx context.Context, dpType string, zones []int, timeouts map[string]int) error
	RemoveZoneTimeouts(ctx context.Context, dpType string, zones []int) error
	// OnChange runs f after each change the database sends (on the
	// client's goroutine: f must not block).
	OnChange(f func())
	Close()
}

// hostNetwork is what the driver asks of the node's network.
type hostNetwork interface {
	Sync(ctx context.Context, c hostnet.Config, frontends []netip.Addr, captures []hostnet.Capture, nodePorts []hostnet.ProtoPort) error
	// Audit is Sync for the periodic audit, which may leave the nftables
	// table unwritten while it holds what was last written (hostnet.Host).
	// It keeps none of the slices it is given: the next audit copies
	// into them again (audit.go).
	Audit(ctx context.Context, c hostnet.Config, frontends []netip.Addr, captures []hostnet.Capture, nodePorts []hostnet.ProtoPort) error
	Update(ctx context.Context, c hostnet.Config, frontends map[netip.Addr]bool, all func() ([]netip.Addr, []hostnet.Capture), captures []hostnet.Capture, nodePorts []hostnet.ProtoPort) error
	Cleanup(ctx context.Context) error
	Unroutable() []hostnet.Route
	LinkMTU(ip netip.Addr) (int, bool)
	DeleteLink(name string) error
	Close()
}

// dataplane is what a driver opens: its connections and its lock.
type dataplane struct {
	db   portDatabase
	host hostNetwork
	lock *instancelock.Lock
	// bridge connects to the bridge's OpenFlow side; h hears its
	// reconnections and packet-ins.
	bridge func(h ofconn.Handler) *ofconn.Conn
	// datapath: there is an ovs-vswitchd whose datapath follows each
	// commit (vswitchd.Follower) and whose control socket flushes conntrack
	// (false for an in-memory bridge).
	datapath bool
}

// openOVS opens the real dataplane: OVSDB, then (before touching anything:
// one switchyard per bridge) the bridge's lock, then the host's network.
func openOVS(ctx context.Context, o Options) (dataplane, error) {
	db, err := ovsdb.Connect(ctx, filepath.Join(o.RunDir, "db.sock"))
	if err != nil {
		return dataplane{}, err
	}
	lock, err := instancelock.Acquire(filepath.Join(o.RunDir, "switchyard-"+o.Bridge+".lock"), "bridge "+o.Bridge)
	if err != nil {
		db.Close()
		return dataplane{}, err
	}
	host, err := hostnet.Open(o.HostNetNS)
	if err != nil {
		db.Close()
		lock.Release()
		return dataplane{}, fmt.Errorf("the host's network: %w", err)
	}
	socket := filepath.Join(o.RunDir, o.Bridge+".mgmt")
	return dataplane{db: db, host: host, lock: lock, datapath: true,
		bridge: func(h ofconn.Handler) *ofconn.Conn { return ofconn.Dial(socket, h) }}, nil
}
