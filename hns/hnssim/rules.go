package hnssim

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/hns"
)

// The rules the packet evaluator applies, each with its source; "assumed"
// where no source states it. docs/hns.md ("The simulator") lists them too.
// Sources: hcn is hcsshim's hcn package (v0.13.0) and microsoft/hnslib's
// (v0.1.2), which carry the same comments; winkernel is upstream
// kube-proxy's pkg/proxy/winkernel (Kubernetes v1.35); "Windows
// networking" is kubernetes.io's page "Networking on Windows".
//
// F, which load balancer takes a packet:
//
//	F1 a port mapping takes packets of its protocol and external port to
//	   one of its load balancer's FrontendVIPs (hcn's schema).
//	F2 ILB mappings ("enables internal loadbalancing", hcn) take no packet
//	   from other machines; that "internal" means this host's pods and the
//	   host is assumed.
//	F3 from the host, a packet to one of the host's own addresses is taken
//	   only by a mapping with LocalRoutedVIP (hcn: "enables VIP access from
//	   the host"; Azure/azure-container-networking#1863: without it such
//	   traffic "will never reach container networking stack but instead be
//	   dropped by TCP/IP stack"). Windows networking's older limitation
//	   "Local NodePort access from the node itself" is read as the case
//	   without the flag. The host's packets to other VIPs (ClusterIPs) are
//	   balanced: assumed.
//	F4 a load balancer without FrontendVIPs (NodePort) takes packets to the
//	   host's addresses of its family, the IPv6 flag saying which
//	   (winkernel: "user should be able to use nodeIP:nodePort"); from pods
//	   whatever LocalRoutedVIP says (assumed: load balancers apply to what
//	   leaves a pod's port).
//	F5 other machines' packets to any VIP are balanced (assumed: the VIP is
//	   routed to this node by someone else).
//
// B, which backend: B1 SourceIP distribution keeps a client on one backend
// (hcn LoadBalancerDistributionSourceIP; Windows networking, session
// affinity); otherwise connections spread (by a hash: assumed).
//
// S, the source the backend sees:
//
//	S1 with DSR, the client's address (Windows networking, DSR: "service
//	   traffic arrives with the source IP set as the originating pod IP";
//	   "Client IP preservation": externalTrafficPolicy Local with DSR).
//	S2 without DSR, the load balancer's SourceVIP (winkernel's
//	   configuration: sourceVip "used for NAT when loadbalancing"; its flag:
//	   "The IP address of the source VIP for non-DSR"), for every balanced
//	   connection, a pod's to a pod of its own host included (assumed: the
//	   flag draws the line at DSR only). An empty SourceVIP: the host's
//	   address of the family (winkernel's comment: "For L2Bridge network the
//	   Source VIP is always the NodeIP"; on overlay, assumed).
//
// D, the destination the backend sees: D1 the VIP with PreserveDIP (hcn:
// "delivers packets with destination IP as the VIP"; Windows networking,
// Preserve-Destination: "Skips DNAT of service traffic"), else the
// backend's own address. UseMux (hcn: "enables DSR for NodePort access of
// VIP") is not modelled: nothing says what a packet then sees.
//
// P, provider addresses (overlay):
//
//	P1 a remote backend without a ProviderAddress policy is not reached
//	   (winkernel sets one on every remote endpoint of an overlay network).
//	P2 a remote backend inside a remote subnet whose provider address is not
//	   that subnet's (the node that holds it) is encapsulated to the wrong
//	   host and never arrives (the provider address is where the VXLAN
//	   packet goes: winkernel's findRemoteSubnetProviderAddress; that the
//	   wrong host drops it: assumed). Outside every remote subnet, winkernel
//	   gives this node's IP ("assuming it is a public IP"): routed as is.
//
// R, the reply: R1 with DSR, a connection from another machine to a
// backend on another node gets no answer (Windows networking: DSR's
// fix-ups occur "at the container vSwitch port directly", and client IP
// preservation "disables node-node forwarding"; that the reply is then
// lost: assumed).
//
// V, established connections (Flows): V1 with VipExternalIP, a connection
// from another machine keeps its backend while the backend stays in the
// load balancer (kubernetes#113742, fixing kubernetes#113842: the flag
// "ensures that once a connection is directed to an endpoint, it continues
// to go to that endpoint despite changes in the list of endpoints");
// without it the connection is balanced again over the changed list and
// breaks when that picks another backend (#113842: connections to the
// remaining pods break; the re-balancing: assumed). V2 connections from
// pods and the host keep their backend while it stays (assumed). V3 a
// connection whose backend left the load balancer breaks.
//
// N, packets no load balancer takes, routed as ordinary traffic, unchanged:
//
//	N1 to one of the host's addresses: the host's own stack.
//	N2 to a pod of this host: that pod; from other machines only on
//	   l2bridge (Windows networking: l2bridge containers "are attached to
//	   the underlay network"; overlay networks are "isolated from underlay
//	   of hosts").
//	N3 to an address of another node's pod prefix (the network's remote
//	   subnets): that pod, from pods (Windows networking: Pod → Pod); from
//	   the host only on l2bridge (Windows networking, Flannel VXLAN:
//	   "Node-pod connectivity is only possible for local pods"); other
//	   machines' packets for it are not this node's.
//	N4 to a remote endpoint of an l2bridge network: its pod, through the
//	   underlay's routes (assumed: Windows networking says l2bridge
//	   "Requires user-defined routes (UDR) for inter-node connectivity").
//	N5 anything else leaves the node: a VIP no load balancer serves, or an
//	   address outside, is answered by nobody here (outbound NAT to the
//	   outside is the CNI's, not modelled).

// sourceSeen is the source a backend sees (S1, S2).
func (s *Sim) sourceSeen(p Packet, lb *hns.LoadBalancer, dsr bool) netip.Addr {
	if dsr {
		return p.Src
	}
	if vip, err := netip.ParseAddr(lb.SourceVIP); err == nil && vip.Is6() == p.Src.Is6() {
		return vip
	}
	for _, ip := range s.hostIPs {
		if ip.Is6() == p.Src.Is6() {
			return ip
		}
	}
	return netip.Addr{}
}

// providerAddressWrong says why a remote backend on an overlay network is
// not reached ("" if it is): P1, P2.
func (s *Sim) providerAddressWrong(ep *hns.Endpoint, ip netip.Addr) string {
	net := s.networkByID(ep.HostComputeNetwork)
	if net == nil || !net.IsOverlay() {
		return ""
	}
	pa := ep.ProviderAddress()
	if pa == "" {
		return "remote backend without a provider address on an overlay network"
	}
	if holder, ok := remoteHolder(net, ip); ok && holder != pa {
		return fmt.Sprintf("remote backend %s has provider address %s, but %s holds it (the network's remote subnets): the encapsulated packet never arrives", ip, pa, holder)
	}
	return ""
}

// remoteHolder is the provider address of the remote subnet holding ip.
func remoteHolder(n *hns.Network, ip netip.Addr) (string, bool) {
	for _, r := range n.RemoteSubnets {
		if p, err := netip.ParsePrefix(r.DestinationPrefix); err == nil && p.Contains(ip) {
			return r.ProviderAddress, true
		}
	}
	return "", false
}

// route is what HNS does with a packet no load balancer takes (N1-N5).
func (s *Sim) route(p Packet) Verdict {
	dst := p.Dst.Addr()
	v := Verdict{Backend: p.Dst, SrcSeen: p.Src, DstSeen: dst}
	if slices.Contains(s.hostIPs, dst) {
		v.Connected, v.ToHost, v.Reason = true, true, "no load balancer: to the host itself"
		return v
	}
	for _, ep := range s.endpoints {
		if ep.IP() != dst.String() {
			continue
		}
		net := s.networkByID(ep.HostComputeNetwork)
		if net == nil {
			continue
		}
		switch {
		case ep.Flags&hns.EndpointFlagRemote == 0:
			if p.From == FromExternal && net.IsOverlay() {
				v.Reason = "no load balancer: a pod of an overlay network is not reached from outside"
				return v
			}
			v.Connected, v.Reason = true, "no load balancer: routed to the pod "+ep.Name
			return v
		case !net.IsOverlay() && p.From != FromExternal:
			v.Connected, v.Reason = true, "no load balancer: routed through the underlay to the remote endpoint "+ep.Name
			return v
		}
	}
	for _, net := range s.networks {
		if _, ok := remoteHolder(net, dst); !ok {
			continue
		}
		switch {
		case p.From == FromExternal:
			v.Reason = "no load balancer: another node's pod is not reached through this node from outside"
		case p.From == FromNode && net.IsOverlay():
			v.Reason = "no load balancer: the host does not reach another node's pods on an overlay network"
		default:
			v.Connected, v.Reason = true, "no load balancer: routed to another node's pod"
		}
		return v
	}
	v.Reason = fmt.Sprintf("no load balancer for %s/%d, and no pod or host address: routed out of the node", p.Dst, p.Protocol)
	return v
}
