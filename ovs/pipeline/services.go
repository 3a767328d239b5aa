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
// Each family is built on its own (familyFlows), each kind of frontend by
// its own function: the ClusterIP, then the external ones (NodePorts,
// external IPs, load-balancer IPs).
func ServiceFlows(c *Config, sp *graph.ServicePort, ids GroupIDs, trees *Trees) ServiceResult {
	var res ServiceResult
	if trees != nil {
		defer trees.sweep()
	}
	endpoints := map[netip.AddrPort]bool{} // reached with affinity: they need DNAT flows
	for _, fam := range sp.Families().List() {
		b := newFamilyBuilder(c, sp, fam, ids, trees, &res, endpoints)
		b.clusterIP()
		for _, fe := range b.externalFrontends() {
			b.external(fe)
		}
	}
	// With affinity, one DNAT flow per endpoint this service port can
	// reach: a learned flow can load an endpoint into the registers but
	// cannot DNAT, so the DNAT is a flow matching them.
	if len(endpoints) == 0 {
		return res
	}
	proto := protoOf(sp.Name.Protocol)
	for _, e := range allEndpoints(sp) {
		if endpoints[e.AddrPort()] {
			res.Endpoints = append(res.Endpoints, dnatFlow(c, e, proto))
			delete(endpoints, e.AddrPort())
		}
	}
	return res
}

// familyBuilder builds one family's flows and groups of a service port
// into res.
type familyBuilder struct {
	c        *Config
	sp       *graph.ServicePort
	fam      graph.IPFamily
	proto    of.IPProto
	affinity bool
	ids      GroupIDs
	maker    groupMaker
	res      *ServiceResult
	// endpoints collects what affinity reaches (ServiceFlows' DNAT flows).
	endpoints map[netip.AddrPort]bool
	// made: lists that have a group already; an equal list shares it.
	made                               []madeList
	internalEPs, externalEPs, shortEPs graph.EndpointList
}

func newFamilyBuilder(c *Config, sp *graph.ServicePort, fam graph.IPFamily, ids GroupIDs, trees *Trees, res *ServiceResult, endpoints map[netip.AddrPort]bool) *familyBuilder {
	proto, affinity := protoOf(sp.Name.Protocol), sp.SessionAffinity.ClientIP
	return &familyBuilder{c: c, sp: sp, fam: fam, proto: proto, affinity: affinity, ids: ids, res: res, endpoints: endpoints,
		maker:       groupMaker{zone: c.CtZone, affinity: affinity, fields: hashFields(fam, proto), ids: ids, trees: trees},
		internalEPs: sp.InternalEndpoints.OfFamily(fam), externalEPs: sp.ExternalEndpoints.OfFamily(fam), shortEPs: sp.ShortCircuitEndpoints.OfFamily(fam)}
}

// target is what a frontend does with a list: pick an endpoint, or
// reject/drop when the list is empty. Equal lists share the group of the
// first slot that had them.
func (b *familyBuilder) target(kind string, eps graph.EndpointList) []of.Action {
	if eps.Len() == 0 {
		if b.sp.NoEndpointsAction(b.fam) == graph.Reject {
			return actions(of.Controller{ID: b.c.ControllerID, UserData: []byte{PacketInReject}})
		}
		return nil // drop
	}
	if b.affinity {
		for e := range eps.All() {
			b.endpoints[e.AddrPort()] = true
		}
	}
	id, seen := sameList(b.made, eps)
	if !seen {
		slot := slotName(b.fam, kind)
		id = b.ids(slot)
		b.made = append(b.made, madeList{eps, id})
		b.res.Groups = append(b.res.Groups, b.maker.groups(id, slot, eps)...)
	}
	next := selected
	if b.affinity {
		next = toLearn
	}
	return actions(next.set(), of.ToGroup(id))
}

func (b *familyBuilder) match(fe frontend) []of.Match {
	return frontendMatch(fe, b.fam, b.proto, toSelect)
}

// clusterIP: the ClusterIP of this family goes to the internal endpoints.
func (b *familyBuilder) clusterIP() {
	cip, ok := graph.FirstOfFamily(b.sp.ClusterIPs, b.fam)
	if !ok {
		return
	}
	fe := frontend{ip: cip, port: b.sp.Port}
	b.res.Flows = append(b.res.Flows, flow(ServiceLB, priorityFrontend, b.match(fe), b.target("internal", b.internalEPs), nil))
	if b.affinity && b.internalEPs.Len() > 0 {
		b.res.Flows = append(b.res.Flows, learnFlow(b.sp, fe, b.fam, b.proto, b.res))
	}
}

// externalFrontends are this family's NodePorts (on the node's addresses,
// reached so by pods, and on the address the host DNATs NodePort traffic
// it receives to), external IPs and load-balancer IPs (with their source
// ranges).
func (b *familyBuilder) externalFrontends() []frontend {
	var ext []frontend
	if b.sp.NodePort != 0 {
		for _, ip := range append(append([]netip.Addr{}, b.c.NodeIPs...), b.c.NodePortIPs...) {
			if graph.FamilyOf(ip) == b.fam {
				ext = append(ext, frontend{ip: ip, port: b.sp.NodePort})
			}
		}
	}
	for _, ip := range b.sp.ExternalIPs {
		if graph.FamilyOf(ip) == b.fam {
			ext = append(ext, b.onNode(frontend{ip: ip, port: b.sp.Port})...)
		}
	}
	for _, ip := range b.sp.LoadBalancerIPs {
		if graph.FamilyOf(ip) == b.fam {
			fe := frontend{ip: ip, port: b.sp.Port}
			for _, r := range b.sp.LoadBalancerSourceRanges {
				if graph.FamilyOf(r.Addr()) == b.fam {
					fe.ranges = append(fe.ranges, r)
				}
			}
			ext = append(ext, b.onNode(fe)...)
		}
	}
	return ext
}

// onNode: an external or load-balancer IP that is the node's own address
// reaches the bridge as the host DNATed it, at the NodePort address too.
func (b *familyBuilder) onNode(fe frontend) []frontend {
	out := []frontend{fe}
	if slices.Contains(b.c.NodeIPs, fe.ip) {
		for _, ip := range b.c.NodePortIPs {
			if graph.FamilyOf(ip) == b.fam {
				out = append(out, frontend{ip: ip, port: fe.port, ranges: fe.ranges})
			}
		}
	}
	return out
}

// externalVariant is one flow of an external frontend: from where, to
// which list, masqueraded or not.
type externalVariant struct {
	prio    uint16
	source  []of.Match
	masq    bool
	kind    string
	targets graph.EndpointList
}

// external: an external frontend goes to the external endpoints (all
// masqueraded with policy Cluster); with policy Local, traffic from this
// node (pods, the node itself) short-circuits to the cluster's endpoints,
// the node's own masqueraded. Source ranges allow their sources only.
func (b *familyBuilder) external(fe frontend) {
	vs := []externalVariant{{priorityFrontend, nil, true, "external", b.externalEPs}}
	if b.sp.ExternalTrafficPolicy == graph.PolicyLocal {
		vs = []externalVariant{
			{priorityFrontendFromNode, matches(fromNode.match()), true, "short-circuit", b.shortEPs},
			{priorityFrontendFromLocal, matches(fromThisNode.match()), false, "short-circuit", b.shortEPs},
			{priorityFrontend, nil, false, "external", b.externalEPs},
		}
	}
	sources := [][]of.Match{nil}
	if len(fe.ranges) > 0 {
		sources = nil
		for _, r := range fe.ranges {
			sources = append(sources, matches(of.IPSrc(r)))
		}
		// Anything else to this LoadBalancer IP is dropped.
		b.res.Flows = append(b.res.Flows, flow(ServiceLB, prioritySourceRangeDrop, b.match(fe), nil, nil))
	}
	for _, src := range sources {
		for _, v := range vs {
			acts := b.target(v.kind, v.targets)
			if v.masq && v.targets.Len() > 0 {
				acts = append(actions(masquerade.set()), acts...)
			}
			match := append(append(b.match(fe), src...), v.source...)
			b.res.Flows = append(b.res.Flows, flow(ServiceLB, v.prio, match, acts, nil))
		}
	}
	if b.affinity && (b.externalEPs.Len() > 0 || b.shortEPs.Len() > 0) {
		b.res.Flows = append(b.res.Flows, learnFlow(b.sp, fe, b.fam, b.proto, b.res))
	}
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
	return actions(loadEndpointIP(e.IP), endpointPortField.load(uint32(e.Port)), of.Resubmit(ServiceLB.ID))
}

// dnat marks the packet as a service's, commits its connection in zone
// with DNAT to the endpoint and continues in L3Forwarding.
// The connection's label keeps the endpoint's address, for the later
// fragments of its datagrams (fragments.go).
func dnat(zone uint16, e graph.Endpoint) []of.Action {
	return actions(setIsService, of.CT{Commit: true, Zone: zone, Table: int(L3Forwarding.ID), NAT: &of.NAT{Kind: "dst", IP: e.IP, Port: e.Port},
		SetMark: serviceConn.value, MarkMask: serviceConn.mask, Label: e.IP})
}

// setIsService is isService.set(), made once: dnat runs for every bucket
// of every group sent.
var setIsService = isService.set()

// dnatFlow is dnat for an endpoint an affinity flow selected into the
// registers.
func dnatFlow(c *Config, e graph.Endpoint, proto of.IPProto) *of.Flow {
	return flow(EndpointDNAT, priorityEndpointDNAT,
		matches(of.EthType(ethType(graph.FamilyOf(e.IP))), of.IPProto(proto), matchEndpointIP(e.IP),
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
		return matches(of.EthType(ethType(fam)), of.CtState{Set: of.CtTrk, Unset: of.CtInv}, // OVS: ct_nw_* needs a valid connection
			of.CtOrigDst{Proto: proto, IP: fe.ip}, frontendPortField.match(uint32(fe.port)), state.match())
	}
	return matches(of.EthType(ethType(fam)), of.IPProto(proto), of.IPDst(host(fe.ip)), of.L4Dst{Proto: proto, Port: fe.port}, state.match())
}
