package hns

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"strings"
)

// Whether a load balancer HNS holds is the one the driver wants is decided
// in two parts, so that a field HNS might answer differently from how it
// was asked (nothing documents that it does, nor that it does not) cannot
// make every full sync replace every load balancer:
//
//   - what HNS is known to echo, compared with HNS's answer: the frontend
//     VIP, the port mapping's protocol and ports, and the endpoint IDs.
//     Upstream winkernel finds its load balancers in HNS's list by these
//     fields alone (hns.go, getAllLoadBalancers: FrontendVIPs[0],
//     PortMappings[0]'s protocol, internal and external port, and a hash
//     of the endpoint IDs upper-cased), so HNS returns them as set. VIPs
//     are compared as addresses (no VIP and an unspecified one are the
//     same) and endpoint IDs as a set, ignoring case, as upstream does;
//   - the rest of what the driver sets (SourceVIP, load balancer and port
//     mapping flags, distribution, schema version), compared with what the
//     driver asked for, which it records (in memory, and in the ownership
//     record for a restart), never with HNS's answer.

// echoed is the part of a load balancer HNS is known to echo.
type echoed struct {
	vip       netip.Addr
	protocol  uint32
	internal  uint16
	external  uint16
	endpoints string // sorted, lower-cased IDs
}

func echoOf(lb LoadBalancer) echoed {
	var e echoed
	for _, v := range lb.FrontendVIPs {
		if ip, err := netip.ParseAddr(v); err == nil && !ip.IsUnspecified() {
			e.vip = ip.Unmap()
			break
		}
	}
	if len(lb.PortMappings) > 0 {
		pm := lb.PortMappings[0]
		e.protocol, e.internal, e.external = pm.Protocol, pm.InternalPort, pm.ExternalPort
	}
	e.endpoints = strings.Join(endpointSet(lb.HostComputeEndpoints), ",")
	return e
}

// endpointSet is a load balancer's endpoint IDs as a set: lower-cased and
// sorted (HNS IDs are GUIDs; upstream compares them upper-cased).
func endpointSet(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = idKey(id)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// idKey is the form of an HNS object ID the driver's maps use.
func idKey(id string) string { return strings.ToLower(id) }

// askedOf digests what the driver sets beyond the echoed fields.
func askedOf(lb LoadBalancer) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%d|%d.%d", lb.SourceVIP, lb.Flags, lb.SchemaVersion.Major, lb.SchemaVersion.Minor)
	for _, pm := range lb.PortMappings {
		fmt.Fprintf(h, "|%d/%d/%d/%d/%d", pm.Protocol, pm.InternalPort, pm.ExternalPort, pm.DistributionType, pm.Flags)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// same reports whether the installed load balancer is the wanted one.
func (in installed) same(want LoadBalancer) bool {
	return in.Asked == askedOf(want) && echoOf(in.Echo) == echoOf(want)
}

// onlyEndpointsDiffer tells the changes made in place: ModifyLoadBalancer
// is used for the hot path (endpoints coming and going); a change of
// flags, distribution, ports or source VIP (rare: a policy edit) replaces
// the load balancer, as every HNS version supports.
func (in installed) onlyEndpointsDiffer(want LoadBalancer) bool {
	a, b := echoOf(in.Echo), echoOf(want)
	a.endpoints = b.endpoints
	return in.Asked == askedOf(want) && a == b
}

// sameEndpoints reports whether HNS's answer has the wanted endpoints (a
// modify read back).
func sameEndpoints(got, want LoadBalancer) bool {
	return slices.Equal(endpointSet(got.HostComputeEndpoints), endpointSet(want.HostComputeEndpoints))
}

// echoDigest is a digest of what HNS echoes of a load balancer (echoOf):
// what an intent in the ownership record names, and what a load balancer
// no record owns must match exactly to be adopted as the intended one.
func echoDigest(lb LoadBalancer) string {
	e := echoOf(lb)
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%d|%d|%d|%s", e.vip, e.protocol, e.internal, e.external, e.endpoints)
	return fmt.Sprintf("%016x", h.Sum64())
}
