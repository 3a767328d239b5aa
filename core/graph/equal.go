package graph

import (
	"maps"
	"slices"
)

// Equal reports whether two service ports carry the same graph data. It
// compares field by field, without reflection: the core calls it once per
// changed service port.
func Equal(a, b *ServicePort) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.Name == b.Name &&
		a.Port == b.Port &&
		a.NodePort == b.NodePort &&
		a.SessionAffinity == b.SessionAffinity &&
		a.InternalTrafficPolicy == b.InternalTrafficPolicy &&
		a.ExternalTrafficPolicy == b.ExternalTrafficPolicy &&
		a.HealthCheckNodePort == b.HealthCheckNodePort &&
		a.UsableFamilies == b.UsableFamilies &&
		slices.Equal(a.ClusterIPs, b.ClusterIPs) &&
		slices.Equal(a.ExternalIPs, b.ExternalIPs) &&
		slices.Equal(a.LoadBalancerIPs, b.LoadBalancerIPs) &&
		slices.Equal(a.LoadBalancerSourceRanges, b.LoadBalancerSourceRanges) &&
		a.InternalEndpoints.Equal(b.InternalEndpoints) &&
		a.ExternalEndpoints.Equal(b.ExternalEndpoints) &&
		a.ShortCircuitEndpoints.Equal(b.ShortCircuitEndpoints) &&
		maps.Equal(a.Annotations, b.Annotations)
}

// EqualNode reports whether two node views are the same.
func EqualNode(a, b Node) bool {
	return a.Name == b.Name && a.Zone == b.Zone && slices.Equal(a.IPs, b.IPs) && slices.Equal(a.PodCIDRs, b.PodCIDRs)
}

// CompareEndpoints orders endpoints by family (IPv4 first), address and port.
func CompareEndpoints(a, b Endpoint) int {
	if fa, fb := FamilyOf(a.IP), FamilyOf(b.IP); fa != fb {
		return int(fa) - int(fb)
	}
	if c := a.IP.Compare(b.IP); c != 0 {
		return c
	}
	return int(a.Port) - int(b.Port)
}

// SortEndpoints sorts endpoints in the graph's canonical order.
func SortEndpoints(eps []Endpoint) { slices.SortFunc(eps, CompareEndpoints) }

// SortServicePorts sorts service ports by name.
func SortServicePorts(sps []*ServicePort) {
	slices.SortFunc(sps, func(a, b *ServicePort) int { return compareNames(a.Name, b.Name) })
}

func compareNames(a, b ServicePortName) int {
	switch {
	case a == b:
		return 0
	case a.Less(b):
		return -1
	}
	return 1
}
