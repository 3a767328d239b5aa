package build

import (
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
)

// ServiceExplanation is why one Service's ports have, on one node, the
// endpoints the graph gives them: ServicePorts' answer, explained.
type ServiceExplanation struct {
	// Skipped says why the whole Service is not proxied (another proxy's
	// label, headless, ExternalName); then nothing else is set.
	Skipped string
	// Rejections are the parts of the Service and its slices refused.
	Rejections []Rejection
	Ports      []PortExplanation
}

// PortExplanation is one service port: each of its families.
type PortExplanation struct {
	Name     graph.ServicePortName
	Families []FamilyExplanation
	// OtherFamily lists endpoints of a family the Service does not have
	// (its ipFamilies): never used.
	OtherFamily []netip.AddrPort
}

// FamilyExplanation is one family of a port: which list each kind of
// frontend uses, and the categorization.
type FamilyExplanation struct {
	Family graph.IPFamily
	// Internal is the list the ClusterIP uses: Cluster, or Local with
	// internalTrafficPolicy Local.
	Internal string
	// External is the list NodePorts, external IPs and load-balancer IPs
	// use ("" when the port has none of this family): Cluster, or Local
	// with externalTrafficPolicy Local.
	External string
	Categorization
}

// The lists a frontend uses.
const (
	ListCluster = "Cluster"
	ListLocal   = "Local"
)

// Explain explains ServicePorts(svc, sl, node, opts): for each port and
// family, every endpoint and what categorization did with it. It builds
// from scratch, as ServicePorts does, so its answer is the graph's for the
// same objects.
func Explain(svc *object.Service, sl []*object.EndpointSlice, node graph.Node, opts Options) ServiceExplanation {
	prepared := make([]*PreparedSlice, len(sl))
	for i, s := range sl {
		prepared[i] = PrepareSlice(s, opts)
	}
	return ExplainPrepared(svc, prepared, node, opts)
}

// ExplainPrepared is Explain over slices already prepared with opts (what
// a tracker keeps).
func ExplainPrepared(svc *object.Service, prepared []*PreparedSlice, node graph.Node, opts Options) ServiceExplanation {
	var x ServiceExplanation
	if svc == nil {
		return x
	}
	if x.Skipped = SkipReason(svc, opts); x.Skipped != "" {
		return x
	}
	rej := rejections{obj: ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name}}
	si := parseService(svc, opts, &rej)
	x.Rejections = rej.list
	if si == nil {
		return x
	}
	sc := &scratch{}
	sc.inNameOrder(prepared)
	for _, s := range sc.order {
		x.Rejections = append(x.Rejections, s.rejections...)
	}
	for _, p := range si.ports {
		eps := dedup(&sc.merged, sc.sortedRuns(sc.order, portKey{name: p.name, protocol: p.protocol}, node.Name))
		x.Ports = append(x.Ports, si.explainPort(p, eps, node))
	}
	return x
}

// explainPort explains one port's families.
func (si *serviceInfo) explainPort(p portInfo, eps []candidate, node graph.Node) PortExplanation {
	px := PortExplanation{Name: si.bareServicePort(p).Name}
	for i := range eps {
		if !si.families.Has(graph.FamilyOf(eps[i].ep.IP)) {
			px.OtherFamily = append(px.OtherFamily, eps[i].ep.AddrPort())
		}
	}
	for _, fam := range si.families.List() {
		pv := policyView{itpLocal: si.itpLocal, etpLocal: si.etpLocal, externallyAccessible: si.externallyAccessible(p, fam)}
		fx := FamilyExplanation{Family: fam, Internal: ListCluster,
			Categorization: explainCategorized(ofFamily(eps, fam), pv, node.Name, node.Zone)}
		if si.itpLocal {
			fx.Internal = ListLocal
		}
		if pv.externallyAccessible {
			fx.External = ListCluster
			if si.etpLocal {
				fx.External = ListLocal
			}
		}
		px.Families = append(px.Families, fx)
	}
	return px
}
