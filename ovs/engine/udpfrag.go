package engine

import (
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

// udpFrontends indexes the UDP service ports by frontend IP (ClusterIPs,
// external IPs, load-balancer IPs): the later fragments of a new datagram
// to an IP that has exactly one get its port (pipeline.LaterFragmentFlows;
// with several, or at a NodePort, they cannot tell which).
type udpFrontends map[netip.Addr]map[graph.ServicePortName]uint16

// frontendIPs are a UDP service port's frontend IPs (none for others).
func udpFrontendIPs(sp *graph.ServicePort) []netip.Addr {
	if sp == nil || sp.Name.Protocol != graph.UDP {
		return nil
	}
	ips := append(append([]netip.Addr{}, sp.ClusterIPs...), sp.ExternalIPs...)
	return append(ips, sp.LoadBalancerIPs...)
}

// update replaces service port n's entries (old's IPs) with now's (nil:
// removed) and returns the IPs whose entries changed.
func (u udpFrontends) update(n graph.ServicePortName, old, now *graph.ServicePort) []netip.Addr {
	var changed []netip.Addr
	for _, ip := range udpFrontendIPs(old) {
		if _, ok := u[ip][n]; ok {
			delete(u[ip], n)
			if len(u[ip]) == 0 {
				delete(u, ip)
			}
			changed = append(changed, ip)
		}
	}
	for _, ip := range udpFrontendIPs(now) {
		if u[ip] == nil {
			u[ip] = map[graph.ServicePortName]uint16{}
		}
		u[ip][n] = now.Port
		changed = append(changed, ip)
	}
	return changed
}

// setUDPFragments sets the later-fragment flows of the IPs.
func (m *Model) setUDPFragments(ips []netip.Addr) {
	for _, ip := range ips {
		owner := FragmentsOwner(ip)
		ports := m.udp[ip]
		if len(ports) != 1 {
			m.st.removeOwner(owner)
			continue
		}
		for _, port := range ports {
			m.st.setOwner(owner, pipeline.LaterFragmentFlows(ip, port), nil, nil)
		}
	}
}
