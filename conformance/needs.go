package conformance

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// What a case needs of a driver is read from the case alone — the
// Services and EndpointSlices each step leaves in the cluster, each
// probe's source, destination and expectation, and the case's
// declarations — never from the core or the driver: whether a step is
// judged must not depend on the code under test (a broken core must make
// a case FAIL, not unsupported).

// Needs lists, step by step, the capabilities a driver needs for the
// step's probes to be judged: the case's requires, and what each probe
// exercises of the frontends it is sent to (probeNeeds), less the case's
// ignoresGaps. Pod-network first, then in the order of dataplanes.All.
func (c *Case) Needs() [][]dataplanes.Capability {
	state := newObjectSet()
	out := make([][]dataplanes.Capability, len(c.Steps))
	for i, s := range c.Steps {
		state.step(s)
		need := slices.Clone(c.Requires)
		for _, p := range s.Probes {
			need = append(need, probeNeeds(state, p)...)
		}
		need = slices.DeleteFunc(need, func(x dataplanes.Capability) bool { return slices.Contains(c.IgnoresGaps, x) })
		out[i] = inDisplayOrder(need)
	}
	return out
}

// probeNeeds is what one probe exercises, with the cluster as state
// holds it: its destination's family and its protocol always; and of
// every frontend it is sent to (usually one), what dataplanes.Needs would
// ask of that frontend's service port, narrowed to what this probe can
// observe:
//   - a NodePort, external IP or load-balancer IP: that kind of frontend,
//     and source-ranges on a load-balancer IP of a Service that lists
//     loadBalancerSourceRanges;
//   - ClientIP affinity: session-affinity, and affinity-timeout when the
//     probe pauses between connections (only then can it see one end);
//   - externalTrafficPolicy Local on a NodePort, external or
//     load-balancer frontend: external-traffic-local, and short-circuit
//     when the probe starts on this node (a pod of it, or the node);
//   - internalTrafficPolicy Local on a ClusterIP: internal-traffic-local;
//   - an expected rejection: reject-no-endpoints (only a frontend without
//     usable endpoints rejects; a driver that cannot reject drops, which
//     a "dropped" or "unreached" probe accepts);
//   - the Service's slices giving one port different numbers (a named
//     targetPort resolving differently on different pods):
//     mixed-target-ports.
func probeNeeds(state *objectSet, p ProbeSpec) []dataplanes.Capability {
	need := []dataplanes.Capability{familyOf(p.dst.Addr()), protocolOf(graph.Protocol(p.Protocol))}
	for _, fe := range state.frontendsAt(p.dst, graph.Protocol(p.Protocol)) {
		spec := fe.svc.Spec
		switch fe.kind {
		case nodePortFrontend:
			need = append(need, dataplanes.NodePort)
		case externalIPFrontend:
			need = append(need, dataplanes.ExternalIPs)
		case loadBalancerFrontend:
			need = append(need, dataplanes.LoadBalancerIPs)
			if len(spec.LoadBalancerSourceRanges) > 0 {
				need = append(need, dataplanes.SourceRanges)
			}
		}
		if spec.SessionAffinity == v1.ServiceAffinityClientIP {
			need = append(need, dataplanes.SessionAffinity)
			if p.interval > 0 {
				need = append(need, dataplanes.AffinityTimeout)
			}
		}
		if fe.kind != clusterIPFrontend && spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
			need = append(need, dataplanes.ExternalLocal)
			if startsOnThisNode(p.From) {
				need = append(need, dataplanes.ShortCircuit)
			}
		}
		if fe.kind == clusterIPFrontend && spec.InternalTrafficPolicy != nil && *spec.InternalTrafficPolicy == v1.ServiceInternalTrafficPolicyLocal {
			need = append(need, dataplanes.InternalLocal)
		}
		if p.Expect.Outcome == ExpectRejected {
			need = append(need, dataplanes.RejectNoEndpoint)
		}
		if state.mixedTargetPorts(fe.svc, fe.port) {
			need = append(need, dataplanes.MixedTargetPorts)
		}
	}
	return need
}

// frontendKind is how a probe reaches a service port.
type frontendKind int

const (
	clusterIPFrontend frontendKind = iota
	nodePortFrontend
	externalIPFrontend
	loadBalancerFrontend
)

// frontend is one service port a destination belongs to, and how.
type frontend struct {
	kind frontendKind
	svc  *v1.Service
	port v1.ServicePort
}

// frontendsAt lists the service ports the objects give an address and
// port of a protocol: as a ClusterIP, a NodePort on the node's address,
// an external IP or a load-balancer ingress IP. It reads the objects as
// Kubernetes defines them and leaves out nothing the core might refuse
// or ignore (headless, another proxy's): a probe of such a frontend is
// judged on whether it is left alone.
func (o *objectSet) frontendsAt(dst netip.AddrPort, proto graph.Protocol) []frontend {
	var out []frontend
	for _, key := range slices.Sorted(maps.Keys(o.services)) {
		svc := o.services[key]
		clusterIPs := svc.Spec.ClusterIPs
		if len(clusterIPs) == 0 {
			clusterIPs = []string{svc.Spec.ClusterIP}
		}
		var ingress []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			ingress = append(ingress, in.IP)
		}
		for _, port := range svc.Spec.Ports {
			if protocolOrTCP(port.Protocol) != proto {
				continue
			}
			onPort := dst.Port() == uint16(port.Port)
			if onPort && holds(clusterIPs, dst.Addr()) {
				out = append(out, frontend{clusterIPFrontend, svc, port})
			}
			if port.NodePort != 0 && dst.Port() == uint16(port.NodePort) && slices.Contains(World.NodeIPs, dst.Addr()) {
				out = append(out, frontend{nodePortFrontend, svc, port})
			}
			if onPort && holds(svc.Spec.ExternalIPs, dst.Addr()) {
				out = append(out, frontend{externalIPFrontend, svc, port})
			}
			if onPort && holds(ingress, dst.Addr()) {
				out = append(out, frontend{loadBalancerFrontend, svc, port})
			}
		}
	}
	return out
}

// mixedTargetPorts reports whether the Service's EndpointSlices give the
// service port's name (and protocol) more than one port number among
// slices that have endpoints.
func (o *objectSet) mixedTargetPorts(svc *v1.Service, port v1.ServicePort) bool {
	var numbers []int32
	for _, sl := range o.slices {
		if sl.Namespace != svc.Namespace || sl.Labels[discovery.LabelServiceName] != svc.Name || len(sl.Endpoints) == 0 {
			continue
		}
		for _, sp := range sl.Ports {
			if sp.Port != nil && deref(sp.Name) == port.Name && protocolOrTCP(derefProtocol(sp.Protocol)) == protocolOrTCP(port.Protocol) {
				numbers = append(numbers, *sp.Port)
			}
		}
	}
	slices.Sort(numbers)
	return len(slices.Compact(numbers)) > 1
}

// startsOnThisNode reports whether a probe source is on node-1: one of
// its pods, or the node itself.
func startsOnThisNode(from string) bool {
	if from == "node" {
		return true
	}
	m, _ := World.Member(from)
	return m.Kind == LocalPod || m.Kind == ClientPod
}

func familyOf(a netip.Addr) dataplanes.Capability {
	if a.Is4() {
		return dataplanes.IPv4
	}
	return dataplanes.IPv6
}

func protocolOf(p graph.Protocol) dataplanes.Capability {
	switch p {
	case graph.UDP:
		return dataplanes.UDP
	case graph.SCTP:
		return dataplanes.SCTP
	}
	return dataplanes.TCP
}

func protocolOrTCP(p v1.Protocol) graph.Protocol {
	if p == "" {
		return graph.TCP
	}
	return graph.Protocol(p)
}

func derefProtocol(p *v1.Protocol) v1.Protocol {
	if p == nil {
		return ""
	}
	return *p
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// holds reports whether a list of addresses as written in an object
// contains a.
func holds(list []string, a netip.Addr) bool {
	return slices.ContainsFunc(list, func(s string) bool {
		b, err := netip.ParseAddr(s)
		return err == nil && b == a
	})
}

// inDisplayOrder sorts capabilities as they are listed (the driver's
// capabilities first, then dataplanes.All) without repeats.
func inDisplayOrder(caps []dataplanes.Capability) []dataplanes.Capability {
	var out []dataplanes.Capability
	for _, c := range append(slices.Clone(dataplanes.NodeCapabilities), dataplanes.All...) {
		if slices.Contains(caps, c) {
			out = append(out, c)
		}
	}
	return out
}
