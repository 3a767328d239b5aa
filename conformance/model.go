package conformance

import (
	"context"
	"hash/fnv"
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// ModelHarness answers probes from a graph, by the reference reading of
// it (Evaluate), instead of from packets. It is the harness of a driver
// that hands the graph to something this suite cannot run (an external
// agent): Graph returns what the driver has published. With a driver that
// just records what it is given, it checks the cases against the core.
type ModelHarness struct {
	HarnessName string
	F           dataplanes.Factory
	D           dataplanes.Driver
	// Graph returns the graph the dataplane holds now (for the example
	// driver: the file it exported, read back).
	Graph func() (graph.Snapshot, error)
}

// Name implements Harness.
func (m *ModelHarness) Name() string { return m.HarnessName }

// Factory implements Harness.
func (m *ModelHarness) Factory() dataplanes.Factory { return m.F }

// Driver implements Harness.
func (m *ModelHarness) Driver() dataplanes.Driver { return m.D }

// CanProbe implements Harness: a graph has no clock, so timeouts cannot
// be probed, and no packets, so no source a backend sees.
func (m *ModelHarness) CanProbe(p Probe) string {
	switch {
	case p.Interval > 0:
		return "a graph model has no clock: timeouts cannot be observed"
	case p.NeedsSource:
		return "a graph model does not know the source a backend sees"
	}
	return ""
}

// Probe implements Harness.
func (m *ModelHarness) Probe(_ context.Context, p Probe) Answer {
	s, err := m.Graph()
	if err != nil {
		return Answer{Outcome: Failed, Detail: err.Error()}
	}
	return Evaluate(s, p)
}

// Evaluate reads a graph as upstream kube-proxy programs it: traffic to a
// ClusterIP reaches the internal endpoints; to a NodePort, external IP or
// load-balancer IP from outside, the external endpoints, and from this
// node (its pods or itself) the short-circuit endpoints when the port has
// externalTrafficPolicy Local; load-balancer IPs drop sources outside the
// port's source ranges; an empty list rejects when the family has no
// usable endpoint anywhere, else drops. Without affinity, connection k
// goes to endpoint k mod n; with ClientIP affinity, a client always goes
// to the same one.
func Evaluate(s graph.Snapshot, p Probe) Answer {
	dst, port := p.Dst.Addr(), p.Dst.Port()
	fam := graph.FamilyOf(dst)
	fromNode := p.FromKind == ClientPod || p.FromKind == LocalPod || p.FromKind == NodeSource
	for _, sp := range s.ServicePorts {
		if sp.Name.Protocol != p.Protocol {
			continue
		}
		var list graph.EndpointList
		switch {
		case port == sp.Port && slices.Contains(sp.ClusterIPs, dst):
			list = sp.InternalEndpoints
		case sp.NodePort != 0 && port == sp.NodePort && slices.Contains(s.Node.IPs, dst),
			port == sp.Port && slices.Contains(sp.ExternalIPs, dst),
			port == sp.Port && slices.Contains(sp.LoadBalancerIPs, dst):
			if slices.Contains(sp.LoadBalancerIPs, dst) && port == sp.Port && !allowed(sp.LoadBalancerSourceRanges, p.Src) {
				return Answer{Outcome: Dropped, Detail: "source outside loadBalancerSourceRanges"}
			}
			list = sp.ExternalEndpoints
			if fromNode && sp.ExternalTrafficPolicy == graph.PolicyLocal {
				list = sp.ShortCircuitEndpoints
			}
		default:
			continue
		}
		eps := list.OfFamily(fam).Slice()
		if len(eps) == 0 {
			if sp.NoEndpointsAction(fam) == graph.Reject {
				return Answer{Outcome: Rejected, Detail: "no usable endpoint: rejected"}
			}
			return Answer{Outcome: Dropped, Detail: "no endpoint for this traffic: dropped"}
		}
		i := p.Conn % len(eps)
		if sp.SessionAffinity.ClientIP {
			h := fnv.New32a()
			h.Write(p.Src.AsSlice())
			i = int(h.Sum32() % uint32(len(eps)))
		}
		return AnswerFrom(eps[i].AddrPort(), p.Protocol)
	}
	return Answer{Outcome: Dropped, Detail: "no service frontend"}
}

// AnswerFrom is what a backend of the world answers at ap.
func AnswerFrom(ap netip.AddrPort, proto graph.Protocol) Answer {
	name := World.Owner(ap.Addr())
	if name == "" {
		return Answer{Outcome: Dropped, Detail: "endpoint " + ap.String() + " is no backend of the world"}
	}
	if !World.Serves(string(proto), ap.Port()) {
		return Answer{Outcome: Rejected, Detail: "the backend does not listen on " + ap.String()}
	}
	return Answer{Outcome: Answered, Identity: Identity(name, ap.Port())}
}

func allowed(ranges []netip.Prefix, src netip.Addr) bool {
	if len(ranges) == 0 {
		return true
	}
	for _, r := range ranges {
		if r.Contains(src) {
			return true
		}
	}
	return false
}
