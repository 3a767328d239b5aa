package hns

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"k8s.io/klog/v2"
)

// What an overlay (VXLAN) network needs besides load balancers, as
// upstream winkernel's syncProxyRules makes it:
//
//   - an endpoint for the source VIP (--hns-source-vip), created when the
//     network has none: a local endpoint with the host's MAC;
//   - per ClusterIP, a remote endpoint at this host (host MAC, this node's
//     IP as provider address); a service port whose one cannot be made
//     gets no load balancers;
//   - remote endpoints whose provider address is the node that holds the
//     backend. Upstream re-reads the network before creating each one; the
//     driver re-reads it once per change round, and also replaces an
//     endpoint of its own whose provider address the network's routes no
//     longer give (a node that joined after the endpoint was made), which
//     upstream does not.

// recheckNetwork re-reads an overlay network before a change round: a
// recreated network (another ID) means everything is re-read; changed
// remote subnet routes re-map every service port (their SourceVIP may
// follow) and are checked against the remote endpoints by
// repairProviderAddresses.
func (d *Driver) recheckNetwork() error {
	if !d.network.IsOverlay() {
		return nil
	}
	n, err := d.c.Network(d.opts.NetworkName)
	if err != nil {
		return fmt.Errorf("HNS network %q: %w", d.opts.NetworkName, err)
	}
	if n.ID != d.network.ID {
		klog.InfoS("The HNS network was recreated: re-reading HNS", "network", n.Name, "oldID", d.network.ID, "newID", n.ID)
		d.stale = true
	}
	d.setNetwork(n)
	return nil
}

// setNetwork takes a network just read; service ports are re-mapped when
// its routes changed.
func (d *Driver) setNetwork(n *Network) {
	old := d.network
	d.network = n
	if old != nil && !slices.Equal(old.RemoteSubnets, n.RemoteSubnets) {
		for _, sp := range d.sps {
			d.setServicePort(sp)
		}
	}
}

// primaryNodeIP is the node IP of the network's family (the node's first).
func (d *Driver) primaryNodeIP() (netip.Addr, bool) {
	if len(d.nodeIPs) == 0 {
		return netip.Addr{}, false
	}
	return d.nodeIPs[0], true
}

// hostMACAddress is the MAC of the host interface with the node IP.
func (d *Driver) hostMACAddress() (string, error) {
	if d.hostMAC != "" {
		return d.hostMAC, nil
	}
	ip, ok := d.primaryNodeIP()
	if !ok {
		return "", errors.New("the node's IP is not known yet (--hns-node-ips, or the Node's addresses): the host's MAC cannot be found")
	}
	mac, err := d.c.HostMAC(ip)
	if err != nil {
		return "", fmt.Errorf("the host's MAC address (for the overlay network's VIP endpoints): %w", err)
	}
	d.hostMAC = mac
	return mac, nil
}

// ensureSourceVIPEndpoint creates the source VIP's endpoint on an overlay
// network that has none, as upstream does at every sync.
func (d *Driver) ensureSourceVIPEndpoint() error {
	vip, err := netip.ParseAddr(d.opts.SourceVIP)
	if !d.network.IsOverlay() || err != nil {
		return nil
	}
	if _, ok := d.local[vip.String()]; ok {
		return nil
	}
	if _, ok := d.remote[vip.String()]; ok {
		return nil
	}
	mac, err := d.hostMACAddress()
	if err != nil {
		return err
	}
	ep, err := d.c.CreateEndpoint(d.network.ID, SourceVIPEndpoint(vip, mac))
	if err != nil {
		return fmt.Errorf("creating the source VIP's endpoint %s: %w", vip, err)
	}
	klog.InfoS("Created the source VIP's HNS endpoint", "sourceVIP", vip, "id", ep.ID)
	d.local[vip.String()] = ep.ID
	return nil
}

// setVIPUsers records which ClusterIPs a service port needs endpoints for.
func (d *Driver) setVIPUsers(name graph.ServicePortName, vips []netip.Addr) {
	var now []string
	for _, v := range vips {
		now = append(now, v.String())
	}
	old := d.spVIPs[name]
	for _, v := range old {
		if !slices.Contains(now, v) {
			d.vipUsers[v]--
			d.vipTouched[v] = true
		}
	}
	for _, v := range now {
		if !slices.Contains(old, v) {
			d.vipUsers[v]++
			d.vipTouched[v] = true
		}
	}
	if len(now) == 0 {
		delete(d.spVIPs, name)
	} else {
		d.spVIPs[name] = now
	}
}

func (d *Driver) touchAllVIPs() {
	for v := range d.vips {
		d.vipTouched[v] = true
	}
	for v := range d.vipUsers {
		d.vipTouched[v] = true
	}
}

// syncVIPEndpoints creates the ClusterIP endpoints in use and deletes
// those no service port needs any more. A failure is kept for the load
// balancers of that ClusterIP, which are not made without it.
func (d *Driver) syncVIPEndpoints() {
	for vip := range d.vipTouched {
		id, have := d.vips[vip]
		users := d.vipUsers[vip]
		switch {
		case users > 0 && !have:
			if err := d.createVIPEndpoint(vip); err != nil {
				d.vipErr[vip] = err
				continue // tried again next round
			}
		case users <= 0 && have:
			if err := d.c.DeleteEndpoint(id); err != nil && !errors.Is(err, ErrNotFound) {
				klog.InfoS("Deleting a ClusterIP's HNS endpoint failed; will retry", "clusterIP", vip, "err", err)
				continue
			}
			delete(d.vips, vip)
		}
		if users <= 0 {
			delete(d.vipUsers, vip)
		}
		delete(d.vipErr, vip)
		delete(d.vipTouched, vip)
	}
}

func (d *Driver) createVIPEndpoint(vip string) error {
	ip, err := netip.ParseAddr(vip)
	if err != nil {
		return err
	}
	mac, err := d.hostMACAddress()
	if err != nil {
		return err
	}
	nodeIP, _ := d.primaryNodeIP()
	ep, err := d.c.CreateEndpoint(d.network.ID, VIPEndpoint(ip, mac, nodeIP))
	if err != nil {
		return fmt.Errorf("creating the ClusterIP's endpoint %s: %w", vip, err)
	}
	d.vips[vip] = ep.ID
	return nil
}

// vipEndpointMissing says why a ClusterIP load balancer on an overlay
// network cannot be made yet: its ClusterIP has no endpoint.
func (d *Driver) vipEndpointMissing(want DesiredLB) error {
	if !d.network.IsOverlay() || want.Kind != KindClusterIP {
		return nil
	}
	if _, ok := d.vips[want.VIP.String()]; ok {
		return nil
	}
	if err := d.vipErr[want.VIP.String()]; err != nil {
		return err
	}
	return fmt.Errorf("the ClusterIP %s has no HNS endpoint yet", want.VIP)
}

// repairProviderAddresses replaces this driver's remote endpoints whose
// provider address is not the one the network's routes now give. HNS
// keeps an endpoint a load balancer uses, so those load balancers are
// deleted first; this round makes the endpoint and them again.
func (d *Driver) repairProviderAddresses() error {
	if !d.network.IsOverlay() {
		return nil
	}
	var errs []error
	for ip, id := range d.remote {
		addr, err := netip.ParseAddr(ip)
		if err != nil {
			continue
		}
		nodeIP, _ := graph.FirstOfFamily(d.nodeIPs, graph.FamilyOf(addr))
		want := ExpectedProviderAddress(d.network.RemoteSubnets, addr, nodeIP)
		have := d.remotePA[idKey(id)]
		if have == want || want == "" {
			continue
		}
		klog.InfoS("A remote HNS endpoint's provider address is stale: replacing it and its load balancers", "ip", ip, "providerAddress", have, "now", want)
		for key, in := range d.inst {
			if !slices.Contains(endpointSet(in.Echo.HostComputeEndpoints), idKey(id)) {
				continue
			}
			if err := d.c.DeleteLoadBalancer(in.ID); err != nil && !errors.Is(err, ErrNotFound) {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
				continue
			}
			d.forget(key, in.ID)
			d.touched[key] = true
		}
		if d.refs[idKey(id)] > 0 {
			continue // a deletion failed: tried again next round
		}
		if err := d.deleteRemote(ip); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
