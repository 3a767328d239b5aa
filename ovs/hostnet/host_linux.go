//go:build linux

package hostnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"
)

// ErrNoGateway is returned while the gateway interface does not exist yet
// (Open vSwitch creates it shortly after its port is added).
var ErrNoGateway = errors.New("gateway interface not there yet")

// Host applies a Config to the host it runs in, or to the network
// namespace it was opened on. It remembers what it installed, so an
// update touches only what changed.
type Host struct {
	nsPath string
	nl     *netlink.Handle
	nft    knftables.Interface

	applied    *Config
	routes     map[netip.Prefix]Route // installed
	nodePorts  []ProtoPort
	captures   []Capture
	unroutable map[netip.Prefix]Route
	written    time.Time        // when the table was last rewritten whole
	now        func() time.Time // time.Now unless set (tests)
}

// Open prepares to change the host of a network namespace ("" for
// switchyard's own). It changes nothing yet.
func Open(nsPath string) (*Host, error) {
	h := &Host{nsPath: nsPath, routes: map[netip.Prefix]Route{}, unroutable: map[netip.Prefix]Route{}}
	var err error
	if nsPath == "" {
		h.nl, err = netlink.NewHandle()
	} else {
		var nsh netns.NsHandle
		if nsh, err = netns.GetFromPath(nsPath); err == nil {
			h.nl, err = netlink.NewHandleAt(nsh)
			nsh.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("netlink in %q: %w", nsPath, err)
	}
	err = h.inNS(func() (err error) {
		// Destroy (a change's elements that went) is nft's from 1.0.7 and
		// kernel 6.3; an add and a delete in one transaction before.
		// UseNetlink: the audit lists the table's sets and chains by name
		// over netlink (a socket per call, made on the calling thread, so
		// in this namespace) instead of nft reading every element.
		h.nft, err = knftables.New(knftables.InetFamily, TableName, knftables.EmulateDestroy, knftables.UseNetlink)
		return err
	})
	if err != nil {
		h.nl.Close()
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return h, nil
}

// Close releases the netlink socket.
func (h *Host) Close() { h.nl.Close() }

// inNS runs f in the host's network namespace (nft and sysctls act on the
// namespace of the thread that runs them).
func (h *Host) inNS(f func() error) error {
	if h.nsPath == "" {
		return f()
	}
	return ns.WithNetNSPath(h.nsPath, func(ns.NetNS) error { return f() })
}

// Sync makes the host hold exactly the configuration, the frontends'
// routes (ClusterIPs whole, external and load-balancer IPs by port) and
// the NodePorts: it reads back the routes carrying RouteProtocol and fixes
// them, and rebuilds the nftables table.
func (h *Host) Sync(ctx context.Context, c Config, frontends []netip.Addr, captures []Capture, nodePorts []ProtoPort) error {
	if err := h.syncRoutes(c, frontends, captures); err != nil {
		return err
	}
	return h.writeTable(ctx, c, nodePorts, captures)
}

// syncRoutes sets the sysctls, the capture routing and the routes, reading
// back those carrying RouteProtocol and fixing them.
func (h *Host) syncRoutes(c Config, frontends []netip.Addr, captures []Capture) error {
	if err := h.sysctls(c); err != nil {
		return err
	}
	gw, err := h.gateway(c)
	if err != nil {
		return err
	}
	if err := h.captureRouting(c); err != nil {
		return err
	}
	installed, err := h.installedRoutes()
	if err != nil {
		return err
	}
	h.routes, h.unroutable = installed, map[netip.Prefix]Route{}
	want := c.Routes(frontends, captures)
	for _, r := range want {
		if err := h.setRoute(gw, r); err != nil {
			return err
		}
	}
	for dst := range installed {
		if _, ok := want[dst]; !ok {
			if err := h.delRoute(dst); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeTable rebuilds the nftables table whole, in one transaction.
func (h *Host) writeTable(ctx context.Context, c Config, nodePorts []ProtoPort, captures []Capture) error {
	tx := h.nft.NewTransaction()
	tableTx(tx, c, nodePorts, captures)
	if err := h.inNS(func() error { return h.nft.Run(ctx, tx) }); err != nil {
		return fmt.Errorf("nftables table %s: %w", TableName, err)
	}
	h.applied, h.nodePorts, h.captures = &c, slices.Clone(nodePorts), slices.Clone(captures)
	h.written = h.clock()
	return nil
}

// Update applies a change: frontends whose routes come (true) or go
// (false), the captured ports when captures is not nil, and the NodePorts
// when nodePorts is not nil. A changed configuration is a full Sync.
func (h *Host) Update(ctx context.Context, c Config, frontends map[netip.Addr]bool, all func() ([]netip.Addr, []Capture), captures []Capture, nodePorts []ProtoPort) error {
	if h.applied == nil || !h.applied.Equal(c) {
		np := nodePorts
		if np == nil {
			np = h.nodePorts
		}
		whole, caps := all()
		return h.Sync(ctx, c, whole, caps, np)
	}
	gw, err := h.gateway(c)
	if err != nil {
		return err
	}
	for ip, add := range frontends {
		r, ok := c.clusterIPRoute(ip)
		switch {
		case !ok:
		case add:
			err = h.setRoute(gw, r)
		default:
			err = h.delRoute(r.Dst)
		}
		if err != nil {
			return err
		}
	}
	if captures != nil {
		if err := h.updateCaptures(ctx, c, gw, captures); err != nil {
			return err
		}
	}
	if nodePorts != nil && !slices.Equal(nodePorts, h.nodePorts) {
		tx := h.nft.NewTransaction()
		nodePortsDeltaTx(tx, h.nodePorts, nodePorts)
		if err := h.inNS(func() error { return h.nft.Run(ctx, tx) }); err != nil {
			return fmt.Errorf("nftables NodePorts: %w", err)
		}
		h.nodePorts = slices.Clone(nodePorts)
	}
	return nil
}

// Cleanup removes every route carrying RouteProtocol and the nftables
// table. The gateway interface goes with its OVS port (the driver's).
func (h *Host) Cleanup(ctx context.Context) error {
	installed, err := h.installedRoutes()
	if err != nil {
		return err
	}
	for dst := range installed {
		if err := h.delRoute(dst); err != nil {
			return err
		}
	}
	if err := h.removeCaptureRules(); err != nil {
		return err
	}
	tx := h.nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	err = h.inNS(func() error { return h.nft.Run(ctx, tx) })
	if err != nil && !knftables.IsNotFound(err) {
		return fmt.Errorf("deleting nftables table %s: %w", TableName, err)
	}
	h.applied, h.routes, h.nodePorts, h.captures = nil, map[netip.Prefix]Route{}, nil, nil
	return nil
}

// gateway brings the gateway interface to the configuration: up, its MTU,
// exactly its addresses (link-local ones aside).
func (h *Host) gateway(c Config) (netlink.Link, error) {
	l, err := h.nl.LinkByName(c.Gateway)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("%w: %s", ErrNoGateway, c.Gateway)
		}
		return nil, fmt.Errorf("gateway %s: %w", c.Gateway, err)
	}
	if c.MTU > 0 && l.Attrs().MTU != c.MTU {
		if err := h.nl.LinkSetMTU(l, c.MTU); err != nil {
			return nil, fmt.Errorf("gateway %s MTU %d: %w", c.Gateway, c.MTU, err)
		}
	}
	addrs, err := h.nl.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	have := map[netip.Prefix]bool{}
	for _, a := range addrs {
		ip, _ := netip.AddrFromSlice(a.IP)
		ones, _ := a.Mask.Size()
		p := netip.PrefixFrom(ip.Unmap(), ones)
		if ip.IsLinkLocalUnicast() {
			continue
		}
		if !slices.Contains(c.Addresses, p) {
			if err := h.nl.AddrDel(l, &a); err != nil {
				return nil, fmt.Errorf("gateway %s: removing %s: %w", c.Gateway, p, err)
			}
			continue
		}
		have[p] = true
	}
	for _, p := range c.Addresses {
		if have[p] {
			continue
		}
		a := &netlink.Addr{IPNet: ipNet(p)}
		if p.Addr().Is6() {
			a.Flags = unix.IFA_F_NODAD
		}
		if err := h.nl.AddrAdd(l, a); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("gateway %s: adding %s: %w", c.Gateway, p, err)
		}
	}
	if l.Attrs().Flags&net.FlagUp == 0 {
		if err := h.nl.LinkSetUp(l); err != nil {
			return nil, fmt.Errorf("gateway %s up: %w", c.Gateway, err)
		}
	}
	return l, nil
}

func (h *Host) installedRoutes() (map[netip.Prefix]Route, error) {
	filter := &netlink.Route{Protocol: RouteProtocol, Table: unix.RT_TABLE_UNSPEC} // main and CaptureTable
	// Walked, not listed: at 10k frontends the list was most of a
	// periodic resync's garbage.
	out := make(map[netip.Prefix]Route, len(h.routes))
	err := h.nl.RouteListFilteredIter(netlink.FAMILY_ALL, filter, netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE, func(r netlink.Route) bool {
		if r.Dst != nil {
			dst := prefixOf(r.Dst)
			via, _ := netip.AddrFromSlice(r.Gw)
			rt := Route{Dst: dst, Via: via.Unmap(), ViaGateway: r.Flags&int(netlink.FLAG_ONLINK) != 0 || r.Gw == nil}
			if r.Table != unix.RT_TABLE_MAIN {
				rt.Table = r.Table
			}
			out[dst] = rt
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("listing routes: %w", err)
	}
	return out, nil
}

func (h *Host) setRoute(gw netlink.Link, r Route) error {
	if old, ok := h.routes[r.Dst]; ok && old == r {
		return nil
	}
	if old, ok := h.routes[r.Dst]; ok && old.Table != r.Table {
		if err := h.delRoute(r.Dst); err != nil { // moving between tables
			return err
		}
	}
	nr := &netlink.Route{Dst: ipNet(r.Dst), Protocol: RouteProtocol, Table: tableOf(r)}
	switch {
	case r.ViaGateway && r.Via.IsValid():
		nr.LinkIndex, nr.Gw, nr.Flags = gw.Attrs().Index, net.IP(r.Via.AsSlice()), int(netlink.FLAG_ONLINK)
	case r.ViaGateway:
		nr.LinkIndex, nr.Scope = gw.Attrs().Index, netlink.SCOPE_LINK
	default:
		nr.Gw = net.IP(r.Via.AsSlice())
	}
	err := h.nl.RouteReplace(nr)
	if !r.ViaGateway && (errors.Is(err, unix.ENETUNREACH) || errors.Is(err, unix.EINVAL)) {
		// A peer not in this node's subnet: its pod CIDR is the
		// network's to route.
		h.unroutable[r.Dst] = r
		return nil
	}
	if err != nil {
		return fmt.Errorf("route %s via %s: %w", r.Dst, r.Via, err)
	}
	delete(h.unroutable, r.Dst)
	h.routes[r.Dst] = r
	return nil
}

// Unroutable lists the peer routes the host could not install because the
// peer is not in a subnet of this node.
func (h *Host) Unroutable() []Route {
	out := make([]Route, 0, len(h.unroutable))
	for _, r := range h.unroutable {
		out = append(out, r)
	}
	return out
}

func (h *Host) delRoute(dst netip.Prefix) error {
	old, ok := h.routes[dst]
	if !ok {
		return nil
	}
	err := h.nl.RouteDel(&netlink.Route{Dst: ipNet(dst), Protocol: RouteProtocol, Table: tableOf(old)})
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("removing route %s: %w", dst, err)
	}
	delete(h.routes, dst)
	return nil
}

// LinkMTU is the MTU of the interface holding ip on the host (false if
// none holds it).
func (h *Host) LinkMTU(ip netip.Addr) (int, bool) {
	addrs, err := h.nl.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return 0, false
	}
	for _, a := range addrs {
		if x, ok := netip.AddrFromSlice(a.IP); ok && x.Unmap() == ip {
			if l, err := h.nl.LinkByIndex(a.LinkIndex); err == nil {
				return l.Attrs().MTU, true
			}
		}
	}
	return 0, false
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func prefixOf(n *net.IPNet) netip.Prefix {
	ip, _ := netip.AddrFromSlice(n.IP)
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(ip.Unmap(), ones)
}

// DeleteLink removes a network interface of the host (a pod veth's host
// end); one that is not there is no error.
func (h *Host) DeleteLink(name string) error {
	l, err := h.nl.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return err
	}
	return h.nl.LinkDel(l)
}
