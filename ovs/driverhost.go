package ovs

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/switchyard-proxy/switchyard/ovs/hostnet"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/podport"
	"k8s.io/klog/v2"
)

// syncHostLocked brings the host to the model's host side: a full read
// back after a Sync, else only what changed (nothing, without a call,
// when nothing did). After a full one, or when the
// node's side changed, the gateway's MTU and the node file for
// switchyard-cni follow (not on every Service change).
func (d *Driver) syncHostLocked(ctx context.Context) error {
	m := d.model
	cfg := m.HostConfig(d.opts.GatewayInterface)
	keep := m.RoutesFrontend
	if len(cfg.Addresses) == 0 {
		d.sayOnce("no-pod-cidr", "The node has no pod CIDR yet (spec.podCIDRs is empty): pods cannot get addresses until it has one", "node", m.Node().Name)
	}
	if d.hostOK && cfg.Equal(d.hostCfg) && !m.Host().HasPending() {
		return nil // the host holds it (the audit checks it, audit.go)
	}
	d.hostMu.Lock()
	defer d.hostMu.Unlock()
	d.hostGen++
	var err error
	full := !d.hostOK || !cfg.Equal(d.hostCfg)
	if !d.hostOK {
		err = d.host.Sync(ctx, cfg, m.Host().FrontendList(keep), m.Host().CaptureList(keep), m.Host().NodePortList())
	} else {
		changes, captures, nodePorts := m.Host().Pending(keep)
		all := func() ([]netip.Addr, []hostnet.Capture) {
			return m.Host().FrontendList(keep), m.Host().CaptureList(keep)
		}
		err = d.host.Update(ctx, cfg, changes, all, captures, nodePorts)
	}
	if err != nil {
		d.hostOK = false
		return fmt.Errorf("the host's network: %w", err)
	}
	d.hostOK, d.hostCfg = true, cfg
	m.Host().Committed()
	for _, r := range d.host.Unroutable() {
		d.sayOnce("unroutable/"+r.Dst.String(), "A peer's pod CIDR cannot be routed to its node (not in this node's subnet): the network must route it (or use an overlay, --ovs-encap)",
			"podCIDR", r.Dst, "node", r.Via)
	}
	if !full {
		return nil
	}
	mtu := d.mtuLocked()
	if mtu != d.mtu {
		if err := d.db.AddPort(ctx, d.opts.Bridge, ovsdb.PortSpec{Name: d.opts.GatewayInterface, Type: "internal",
			MTURequest: mtu, ExternalIDs: map[string]string{KeyRole: "gateway"}}); err != nil {
			d.hostOK = false // retried in full by the next commit
			return err
		}
		d.mtu = mtu
	}
	n := podport.NodeNetwork{Node: m.Node().Name, PodCIDRs: m.Config().PodCIDRs, Gateways: m.Config().GatewayIPs(), MTU: mtu,
		TxChecksumOffload: d.opts.DatapathType != "netdev"}
	if err := podport.WriteNodeNetwork(d.opts.NodeFile, n); err != nil {
		d.hostOK = false
		return fmt.Errorf("node file for switchyard-cni: %w", err)
	}
	return nil
}

// mtuLocked is the pods' MTU: --ovs-mtu, else the MTU of the interface
// holding the node's first address (1500 when none on this host does)
// less the tunnel's overhead.
func (d *Driver) mtuLocked() int {
	if d.opts.MTU > 0 {
		return d.opts.MTU
	}
	base, underlay6 := 1500, false
	if ips := d.model.Config().NodeIPs; len(ips) > 0 {
		underlay6 = ips[0].Is6()
		if mtu, ok := d.host.LinkMTU(ips[0]); ok {
			base = mtu
		}
	}
	return base - tunnelOverhead(d.opts.Encap, underlay6)
}

// markProgrammedLocked tells switchyard-cni, through each pod port's
// switchyard.io/programmed, that the port's flows are installed.
func (d *Driver) markProgrammedLocked(ctx context.Context) {
	for _, p := range d.ports.Pods {
		want := fmt.Sprint(p.Port)
		if p.Programmed == want || d.podHeld(p.Port) {
			continue
		}
		if err := d.db.SetInterfaceExternalIDs(ctx, p.Iface, map[string]string{podport.KeyProgrammed: want}); err != nil {
			klog.ErrorS(err, "Could not mark a pod's port as programmed", "port", p.Iface)
		}
	}
}

// sayOnce logs a condition the first time it is seen.
func (d *Driver) sayOnce(key, msg string, kv ...any) {
	if !d.said[key] {
		d.said[key] = true
		klog.InfoS(msg, kv...)
	}
}
