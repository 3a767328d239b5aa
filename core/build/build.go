package build

import (
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
)

// Result is what one Service contributes to the graph.
type Result struct {
	// Ports are the service's graph entries, sorted by name.
	Ports []*graph.ServicePort
	// Skipped says why the whole Service is not proxied ("" if it is).
	Skipped string
	// Rejections lists every part of the Service and its slices refused.
	Rejections []Rejection
}

// ServicePorts computes the graph entries of one Service for one node from the
// Service and the EndpointSlices that name it. svc may be nil (slices
// without their Service contribute nothing). It validates every slice and
// starts from empty buffers: a Builder with prepared slices is what a
// tracker rebuilding Services uses.
func ServicePorts(svc *object.Service, sl []*object.EndpointSlice, node graph.Node, opts Options) Result {
	prepared := make([]*PreparedSlice, len(sl))
	for i, s := range sl {
		prepared[i] = PrepareSlice(s, opts)
	}
	return NewBuilder(opts).ServicePorts(svc, prepared, node, nil)
}

// Builder builds Services for a graph, keeping its working space between
// builds. Not safe for concurrent use.
type Builder struct {
	opts    Options
	sc      scratch
	patches int // ports built by patching the last build's (for tests)
}

// NewBuilder returns a Builder applying opts (the opts slices were
// prepared with).
func NewBuilder(opts Options) *Builder { return &Builder{opts: opts} }

// ServicePorts is the package's ServicePorts over slices already prepared.
// m, if not nil, is what the last build of this Service merged: it is used
// and updated (see Merged). What it returns shares nothing with the
// Builder's working space or with m.
func (b *Builder) ServicePorts(svc *object.Service, sl []*PreparedSlice, node graph.Node, m *Merged) Result {
	var res Result
	if svc == nil {
		return res
	}
	if res.Skipped = SkipReason(svc, b.opts); res.Skipped != "" {
		return res
	}
	rej := rejections{obj: ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name}}
	si := parseService(svc, b.opts, &rej)
	res.Rejections = rej.list
	if si == nil {
		return res
	}
	b.sc.inNameOrder(sl)
	for _, s := range b.sc.order {
		res.Rejections = append(res.Rejections, s.rejections...)
	}
	var ch sliceChanges
	if m != nil {
		ch = changesSince(m, b.sc.order, node.Name)
	}
	res.Ports = make([]*graph.ServicePort, 0, len(si.ports))
	for _, p := range si.ports {
		key := portKey{name: p.name, protocol: p.protocol}
		sp, how := b.patchedPort(si, p, key, node, m, ch, svc)
		if how != patched {
			eps := b.candidates(key, node, m, ch, how == listUpdated)
			sp = si.servicePort(p, eps, node, &b.sc, m.lastPort(p))
		}
		res.Ports = append(res.Ports, sp)
	}
	if m != nil {
		m.finish(b.sc.order, node, svc, res.Ports)
	}
	graph.SortServicePorts(res.Ports)
	return res
}

// candidates merges the endpoints of every slice port matching key into one
// deduplicated list sorted by ip:port, as upstream's EndpointSliceCache
// does: an endpoint is keyed by ip:port; when several slices carry the
// same one, a non-terminating copy wins over a terminating one. node is
// the graph's node ("": none is local). The list lives in the Builder's
// working space until the next call.
// With updated, the kept list is already this build's (patchedPort
// updated it, then found the change too large to patch). A kept list's
// counts are recorded for the next build's patchedPort.
func (b *Builder) candidates(key portKey, node graph.Node, m *Merged, ch sliceChanges, updated bool) []candidate {
	sc := &b.sc
	if m == nil || runsOf(sc.order, key) < 2 {
		return dedup(&sc.merged, sc.sortedRuns(sc.order, key, node.Name))
	}
	var eps []candidate
	if updated {
		eps = dedup(&sc.merged, m.port(key).list)
	} else {
		eps = dedup(&sc.merged, sc.keptCandidates(m, ch, key, node.Name))
	}
	kp := m.port(key)
	kp.counts = [2]familyCounts{}
	for i := range eps {
		kp.counts[familyIndex(graph.FamilyOf(eps[i].ep.IP))].add(&eps[i], node, 1)
	}
	kp.counted = true
	return eps
}

// servicePort builds one graph entry, categorizing each family on its own as
// upstream's per-family proxiers do, then listing the families side by side.
// Categorized lists live in sc until copied into the entry.
func (si *serviceInfo) servicePort(p portInfo, eps []candidate, node graph.Node, sc *scratch, prev *graph.ServicePort) *graph.ServicePort {
	sp := si.bareServicePort(p)
	// Whether the external (and short-circuit) lists are the internal one,
	// decided before any is built: the lists are then built once.
	externalIsInternal, shortCircuitIsInternal := si.listsShared(p)

	flat := &sc.flat
	for i := range flat {
		flat[i] = flat[i][:0]
	}
	for _, fam := range si.families.List() {
		pv := policyView{
			itpLocal:             si.itpLocal,
			etpLocal:             si.etpLocal,
			externallyAccessible: si.externallyAccessible(p, fam),
		}
		cat := categorize(ofFamily(eps, fam), pv, node.Name, node.Zone, sc)
		if cat.hasAny {
			sp.UsableFamilies = sp.UsableFamilies.With(fam)
		}
		internal, external := cat.cluster, cat.cluster
		if si.itpLocal {
			internal = cat.local
		}
		if si.etpLocal {
			external = cat.local
		}
		flat[internalList] = appendEndpoints(flat[internalList], internal)
		if pv.externallyAccessible && !externalIsInternal {
			flat[externalList] = appendEndpoints(flat[externalList], external)
		}
		if pv.externallyAccessible && si.etpLocal && !shortCircuitIsInternal {
			flat[shortCircuitList] = appendEndpoints(flat[shortCircuitList], cat.cluster)
		}
	}
	// Most service ports have the same endpoints in several lists (every
	// externally reachable one without traffic policies): they share one
	// list, as the graph is read-only (copies were a third of the graph's
	// memory: docs/scale.md, "Figures behind the code").
	var was [3]graph.EndpointList
	if prev != nil {
		was = [3]graph.EndpointList{prev.InternalEndpoints, prev.ExternalEndpoints, prev.ShortCircuitEndpoints}
	}
	lists := *flat // the scratch's buffers stay apart: these may alias
	if externalIsInternal {
		lists[externalList] = lists[internalList]
	}
	if shortCircuitIsInternal {
		lists[shortCircuitList] = lists[internalList]
	}
	sp.InternalEndpoints = was[internalList].Update(lists[internalList])
	sp.ExternalEndpoints = shared(lists[externalList], was[externalList], lists[:externalList], sp.InternalEndpoints)
	sp.ShortCircuitEndpoints = shared(lists[shortCircuitList], was[shortCircuitList], lists[:shortCircuitList], sp.InternalEndpoints, sp.ExternalEndpoints)
	return sp
}

// shared is the graph list of eps: the list made before it (made[i] of
// flat lists before[i]) that holds the same endpoints, else a new version
// of was. An empty list is never shared.
func shared(eps []graph.Endpoint, was graph.EndpointList, before [][]graph.Endpoint, made ...graph.EndpointList) graph.EndpointList {
	for i, b := range before {
		if len(eps) > 0 && slices.Equal(eps, b) {
			return made[i]
		}
	}
	return was.Update(eps)
}

// The lists of a service port, as indexes of the scratch's flat lists.
const (
	internalList = iota
	externalList
	shortCircuitList
)

// bareServicePort is the port's graph entry without its endpoints.
func (si *serviceInfo) bareServicePort(p portInfo) *graph.ServicePort {
	sp := &graph.ServicePort{
		Name:                     graph.ServicePortName{Namespace: si.namespace, Name: si.name, Port: p.name, Protocol: p.protocol},
		ClusterIPs:               si.clusterIPs,
		Port:                     p.port,
		NodePort:                 p.nodePort,
		ExternalIPs:              si.externalIPs,
		LoadBalancerIPs:          si.lbIPs,
		LoadBalancerSourceRanges: si.sourceRanges,
		SessionAffinity:          si.affinity,
		InternalTrafficPolicy:    graph.PolicyCluster,
		ExternalTrafficPolicy:    graph.PolicyCluster,
		HealthCheckNodePort:      si.healthCheckPort,
		Annotations:              si.annotations,
	}
	if si.itpLocal {
		sp.InternalTrafficPolicy = graph.PolicyLocal
	}
	if si.etpLocal {
		sp.ExternalTrafficPolicy = graph.PolicyLocal
	}
	return sp
}

// listsShared says whether the port's external and short-circuit lists
// are its internal list whatever its endpoints: every family is
// externally accessible and the policies make them so.
func (si *serviceInfo) listsShared(p portInfo) (externalIsInternal, shortCircuitIsInternal bool) {
	allExternal := true
	for _, fam := range si.families.List() {
		allExternal = allExternal && si.externallyAccessible(p, fam)
	}
	return allExternal && si.etpLocal == si.itpLocal, allExternal && si.etpLocal && !si.itpLocal
}

// externallyAccessible: the port has a node port, or an external or
// load-balancer IP of the family.
func (si *serviceInfo) externallyAccessible(p portInfo, fam graph.IPFamily) bool {
	return p.nodePort != 0 || hasFamily(si.externalIPs, fam) || hasFamily(si.lbIPs, fam)
}

// ofFamily returns the candidates of one family; candidates are sorted IPv4
// first, so each family is a contiguous run.
func ofFamily(eps []candidate, fam graph.IPFamily) []candidate {
	lo := 0
	for lo < len(eps) && graph.FamilyOf(eps[lo].ep.IP) != fam {
		lo++
	}
	hi := lo
	for hi < len(eps) && graph.FamilyOf(eps[hi].ep.IP) == fam {
		hi++
	}
	return eps[lo:hi]
}

func hasFamily(ips []netip.Addr, fam graph.IPFamily) bool {
	for _, ip := range ips {
		if graph.FamilyOf(ip) == fam {
			return true
		}
	}
	return false
}

// appendEndpoints appends the candidates' endpoints to dst.
func appendEndpoints(dst []graph.Endpoint, src []candidate) []graph.Endpoint {
	for i := range src {
		dst = append(dst, src[i].ep)
	}
	return dst
}
