package pipeline

import (
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// MaxAffinityTimeout is the longest idle_timeout a learned flow can have.
const MaxAffinityTimeout = 65535

// ServiceResult is what one service port needs in the bridge.
type ServiceResult struct {
	// Flows are the service port's own ServiceLB flows.
	Flows []*of.Flow
	// Groups are its select groups (IDs from the allocator).
	Groups []*of.Group
	// Endpoints are EndpointDNAT flows, for service ports with ClientIP
	// affinity only; several may need the same one (same endpoint, port
	// and protocol).
	Endpoints []*of.Flow
	// AffinityClamped is set when timeoutSeconds exceeded MaxAffinityTimeout.
	AffinityClamped bool
}

// AllFlows is the service port's flows and then its EndpointDNAT flows.
func (r ServiceResult) AllFlows() []*of.Flow {
	return append(append(make([]*of.Flow, 0, len(r.Flows)+len(r.Endpoints)), r.Flows...), r.Endpoints...)
}

// GroupIDs hands out the group ID of one of a service port's endpoint
// lists, by slot ("IPv4/internal", "IPv6/external", ...). The driver keeps
// an ID for as long as the slot exists, so a changed endpoint list is one
// group modification.
type GroupIDs func(slot string) uint32

func protoOf(p graph.Protocol) of.IPProto {
	switch p {
	case graph.UDP:
		return of.ProtoUDP
	case graph.SCTP:
		return of.ProtoSCTP
	}
	return of.ProtoTCP
}

// frontend is one address and port traffic arrives on.
type frontend struct {
	ip     netip.Addr
	port   uint16
	ranges []netip.Prefix // source filter (LoadBalancer IPs only)
}

// ServiceFlows maps one service port to flows and groups. trees, if not
// nil, is what the port's last rendering kept of its long lists' trees:
// used and updated (see Trees). The result is the same with or without.
func ServiceFlows(c *Config, sp *graph.ServicePort, ids GroupIDs, trees *Trees) ServiceResult {
	var res ServiceResult
	if trees != nil {
		defer trees.sweep()
	}
	proto := protoOf(sp.Name.Protocol)
	affinity := sp.SessionAffinity.ClientIP
	endpoints := map[netip.AddrPort]bool{}

	for _, fam := range sp.Families().List() {
		lists := struct{ internal, external, short graph.EndpointList }{
			sp.InternalEndpoints.OfFamily(fam), sp.ExternalEndpoints.OfFamily(fam), sp.ShortCircuitEndpoints.OfFamily(fam),
		}
		// target is what a frontend does with a list: pick an endpoint,
		// or reject/drop when the list is empty. Equal lists share the
		// group of the first slot that had them.
		var made []madeList
		maker := groupMaker{zone: c.CtZone, affinity: affinity, fields: hashFields(fam, proto), ids: ids, trees: trees}
		target := func(kind string, eps graph.EndpointList) []of.Action {
			if eps.Len() == 0 {
				if sp.NoEndpointsAction(fam) == graph.Reject {
					return a(of.Controller{ID: c.ControllerID, UserData: []byte{PacketInReject}})
				}
				return nil // drop
			}
			if affinity {
				for e := range eps.All() {
					endpoints[e.AddrPort()] = true
				}
			}
			id, seen := sameList(made, eps)
			if !seen {
				slot := slotName(fam, kind)
				id = ids(slot)
				made = append(made, madeList{eps, id})
				res.Groups = append(res.Groups, maker.groups(id, slot, eps)...)
			}
			next := selected
			if affinity {
				next = toLearn
			}
			return a(next.set(), of.ToGroup(id))
		}
		base := func(fe frontend) []of.Match { return frontendMatch(fe, fam, proto, toSelect) }

		// ClusterIP.
		if cip, ok := graph.FirstOfFamily(sp.ClusterIPs, fam); ok {
			fe := frontend{ip: cip, port: sp.Port}
			res.Flows = append(res.Flows, flow(ServiceLB, priorityFrontend, base(fe), target("internal", lists.internal), nil))
			if affinity && lists.internal.Len() > 0 {
				res.Flows = append(res.Flows, learnFlow(sp, fe, fam, proto, &res))
			}
		}

		// External frontends.
		var ext []frontend
		if sp.NodePort != 0 {
			// The node's addresses (reached so by pods), and the address
			// the host DNATs NodePort traffic it receives to.
			for _, ip := range append(append([]netip.Addr{}, c.NodeIPs...), c.NodePortIPs...) {
				if graph.FamilyOf(ip) == fam {
					ext = append(ext, frontend{ip: ip, port: sp.NodePort})
				}
			}
		}
		// An external or load-balancer IP that is the node's own address
		// reaches the bridge as the host DNATed it, at the NodePort
		// address.
		onNode := func(fe frontend) []frontend {
			out := []frontend{fe}
			if slices.Contains(c.NodeIPs, fe.ip) {
				for _, ip := range c.NodePortIPs {
					if graph.FamilyOf(ip) == fam {
						out = append(out, frontend{ip: ip, port: fe.port, ranges: fe.ranges})
					}
				}
			}
			return out
		}
		for _, ip := range sp.ExternalIPs {
			if graph.FamilyOf(ip) == fam {
				ext = append(ext, onNode(frontend{ip: ip, port: sp.Port})...)
			}
		}
		for _, ip := range sp.LoadBalancerIPs {
			if graph.FamilyOf(ip) == fam {
				fe := frontend{ip: ip, port: sp.Port}
				for _, r := range sp.LoadBalancerSourceRanges {
					if graph.FamilyOf(r.Addr()) == fam {
						fe.ranges = append(fe.ranges, r)
					}
				}
				ext = append(ext, onNode(fe)...)
			}
		}
		local := sp.ExternalTrafficPolicy == graph.PolicyLocal
		for _, fe := range ext {
			type variant struct {
				prio    uint16
				source  []of.Match
				masq    bool
				kind    string
				targets graph.EndpointList
			}
			var vs []variant
			if local {
				// Traffic from this node (pods, the node itself) short-circuits
				// to cluster endpoints; the node's own is masqueraded.
				vs = []variant{
					{priorityFrontendFromNode, m(fromNode.match()), true, "short-circuit", lists.short},
					{priorityFrontendFromLocal, m(fromThisNode.match()), false, "short-circuit", lists.short},
					{priorityFrontend, nil, false, "external", lists.external},
				}
			} else {
				vs = []variant{{priorityFrontend, nil, true, "external", lists.external}}
			}
			sources := [][]of.Match{nil}
			if len(fe.ranges) > 0 {
				sources = nil
				for _, r := range fe.ranges {
					sources = append(sources, m(of.IPSrc(r)))
				}
				// Anything else to this LoadBalancer IP is dropped.
				res.Flows = append(res.Flows, flow(ServiceLB, prioritySourceRangeDrop, base(fe), nil, nil))
			}
			for _, src := range sources {
				for _, v := range vs {
					acts := target(v.kind, v.targets)
					if v.masq && v.targets.Len() > 0 {
						acts = append(a(masquerade.set()), acts...)
					}
					match := append(append(base(fe), src...), v.source...)
					res.Flows = append(res.Flows, flow(ServiceLB, v.prio, match, acts, nil))
				}
			}
			if affinity && (lists.external.Len() > 0 || lists.short.Len() > 0) {
				res.Flows = append(res.Flows, learnFlow(sp, fe, fam, proto, &res))
			}
		}
	}

	// With affinity, one DNAT flow per endpoint this service port can
	// reach: a learned flow can load an endpoint into the registers but
	// cannot DNAT, so the DNAT is a flow matching them.
	if len(endpoints) == 0 {
		return res
	}
	for _, e := range allEndpoints(sp) {
		if endpoints[e.AddrPort()] {
			res.Endpoints = append(res.Endpoints, dnatFlow(c, e, proto))
			delete(endpoints, e.AddrPort())
		}
	}
	return res
}

// slotName names a service port's endpoint list for its group ID
// ("IPv4/internal"): literals for the lists the pipeline has, so the
// allocator that keeps them allocates nothing per service port.
func slotName(fam graph.IPFamily, kind string) string {
	v6 := fam == graph.IPv6
	switch {
	case kind == "internal" && !v6:
		return "IPv4/internal"
	case kind == "internal":
		return "IPv6/internal"
	case kind == "external" && !v6:
		return "IPv4/external"
	case kind == "external":
		return "IPv6/external"
	case kind == "short-circuit" && !v6:
		return "IPv4/short-circuit"
	case kind == "short-circuit":
		return "IPv6/short-circuit"
	}
	return fam.String() + "/" + kind
}

// hashFields select an endpoint by the connection's 5-tuple (see
// of.Group.HashFields for why not OVS's default dp_hash). The lists are
// shared by every group of a family and protocol.
func hashFields(fam graph.IPFamily, proto of.IPProto) []of.HashField {
	v6 := 0
	if fam == graph.IPv6 {
		v6 = 1
	}
	switch proto {
	case of.ProtoUDP:
		return hashFieldLists[v6][1]
	case of.ProtoSCTP:
		return hashFieldLists[v6][2]
	}
	return hashFieldLists[v6][0]
}

var hashFieldLists = [2][3][]of.HashField{
	{{of.HashIPSrc, of.HashIPDst, of.HashTCPSrc, of.HashTCPDst}, {of.HashIPSrc, of.HashIPDst, of.HashUDPSrc, of.HashUDPDst}, {of.HashIPSrc, of.HashIPDst, of.HashSCTPSrc, of.HashSCTPDst}},
	{{of.HashIPv6Src, of.HashIPv6Dst, of.HashTCPSrc, of.HashTCPDst}, {of.HashIPv6Src, of.HashIPv6Dst, of.HashUDPSrc, of.HashUDPDst}, {of.HashIPv6Src, of.HashIPv6Dst, of.HashSCTPSrc, of.HashSCTPDst}},
}

// madeList is an endpoint list whose groups a service port has made.
type madeList struct {
	eps graph.EndpointList
	id  uint32
}

// sameList finds the group made for a list of the same endpoints (within
// a service port, equal lists make equal buckets).
func sameList(made []madeList, eps graph.EndpointList) (uint32, bool) {
	for _, l := range made {
		if sameAddrPorts(l.eps, eps) {
			return l.id, true
		}
	}
	return 0, false
}

// sameAddrPorts reports whether two lists hold the same addresses and
// ports in the same order (parts they share are not compared).
func sameAddrPorts(a, b graph.EndpointList) bool {
	return a.EqualFunc(b, func(x, y graph.Endpoint) bool { return x.AddrPort() == y.AddrPort() })
}

func allEndpoints(sp *graph.ServicePort) []graph.Endpoint {
	var all []graph.Endpoint
	for _, l := range sp.EndpointLists() {
		all = append(all, l.Slice()...)
	}
	graph.SortEndpoints(all)
	return all
}

// endpointBuckets are a select group's buckets, one per endpoint, built
// from the endpoints (which the graph or the tree keeps anyway) when
// needed.
type endpointBuckets struct {
	zone     uint16
	eps      []graph.Endpoint // read-only
	affinity bool
}

func (b endpointBuckets) Len() int { return len(b.eps) }

// endpoint is bucket i's endpoint.
func (b endpointBuckets) endpoint(i int) graph.Endpoint { return b.eps[i] }

// Bucket is what choosing endpoint i does. Without affinity the bucket
// commits the connection with DNAT to the endpoint itself (as OVN's load
// balancers do), so a service port costs flows per frontend whatever its
// number of endpoints. With affinity it loads the endpoint into the
// registers and goes back to ServiceLB to learn it, then to EndpointDNAT.
func (b endpointBuckets) Bucket(i int) []of.Action {
	e := b.endpoint(i)
	if !b.affinity {
		return dnat(b.zone, e)
	}
	return a(loadEndpointIP(e.IP), endpointPortField.load(uint32(e.Port)), of.Resubmit(ServiceLB.ID))
}

// dnat marks the packet as a service's, commits its connection in zone
// with DNAT to the endpoint and continues in L3Forwarding.
// The connection's label keeps the endpoint's address, for the later
// fragments of its datagrams (fragments.go).
func dnat(zone uint16, e graph.Endpoint) []of.Action {
	return a(isService.set(), of.CT{Commit: true, Zone: zone, Table: int(L3Forwarding.ID), NAT: &of.NAT{Kind: "dst", IP: e.IP, Port: e.Port},
		SetMark: serviceConn.value, MarkMask: serviceConn.mask, Label: e.IP})
}

// dnatFlow is dnat for an endpoint an affinity flow selected into the
// registers.
func dnatFlow(c *Config, e graph.Endpoint, proto of.IPProto) *of.Flow {
	return flow(EndpointDNAT, priorityEndpointDNAT,
		m(of.EthType(ethType(graph.FamilyOf(e.IP))), of.IPProto(proto), matchEndpointIP(e.IP),
			selected.match(), endpointPortField.match(uint32(e.Port))),
		dnat(c.CtZone, e), nil)
}

// frontendMatch matches new connections to a frontend in an endpoint
// selection state. UDP matches the connection's original tuple, which
// every fragment of a datagram carries (fragments.go); TCP and SCTP
// segment themselves below the path MTU and are never fragmented.
func frontendMatch(fe frontend, fam graph.IPFamily, proto of.IPProto, state regMark) []of.Match {
	if proto == of.ProtoUDP {
		// Not the packet's protocol: an IPv6 later fragment's reads 44.
		return m(of.EthType(ethType(fam)), of.CtState{Set: of.CtTrk, Unset: of.CtInv}, // OVS: ct_nw_* needs a valid connection
			of.CtOrigDst{Proto: proto, IP: fe.ip}, frontendPortField.match(uint32(fe.port)), state.match())
	}
	return m(of.EthType(ethType(fam)), of.IPProto(proto), of.IPDst(host(fe.ip)), of.L4Dst{Proto: proto, Port: fe.port}, state.match())
}
