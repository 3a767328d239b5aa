package tracker

import (
	"fmt"
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	v1 "k8s.io/api/core/v1"
)

// NodeView reduces a Node to what the graph needs: its zone label, its
// primary IPs (first InternalIP of each family, else first ExternalIP; the
// family of the first address found comes first), as upstream picks NodePort
// addresses by default, and its pod CIDRs (spec.podCIDRs, else
// spec.podCIDR; one per family). Pod CIDRs that do not parse, or a second
// one of a family, are left out and returned as rejections.
func NodeView(n *v1.Node) (graph.Node, []build.Rejection) {
	view := graph.Node{Name: n.Name, Zone: n.Labels[object.LabelZone]}
	var byFamily [3]netip.Addr
	var order []graph.IPFamily
	for _, typ := range []v1.NodeAddressType{v1.NodeInternalIP, v1.NodeExternalIP} {
		for _, a := range n.Status.Addresses {
			if a.Type != typ {
				continue
			}
			ip, err := netip.ParseAddr(a.Address)
			if err != nil {
				continue
			}
			ip = ip.Unmap()
			f := graph.FamilyOf(ip)
			if !byFamily[f].IsValid() {
				byFamily[f] = ip
				order = append(order, f)
			}
		}
	}
	for _, f := range order {
		view.IPs = append(view.IPs, byFamily[f])
	}

	cidrs := n.Spec.PodCIDRs
	if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
		cidrs = []string{n.Spec.PodCIDR}
	}
	var rejs []build.Rejection
	var fams graph.FamilySet
	for i, s := range cidrs {
		reject := func(reason build.Reason, msg string) {
			rejs = append(rejs, build.Rejection{Object: build.ObjectRef{Kind: "Node", Name: n.Name},
				Field: fmt.Sprintf("spec.podCIDRs[%d]", i), Reason: reason, Message: msg})
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			reject(build.ReasonInvalidCIDR, fmt.Sprintf("%q is not a CIDR: ignored", s))
			continue
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-unmappedBits(p)).Masked()
		f := graph.FamilyOf(p.Addr())
		if fams.Has(f) {
			reject(build.ReasonDuplicateFamily, fmt.Sprintf("%s: a second %s pod CIDR: ignored", s, f))
			continue
		}
		fams = fams.With(f)
		view.PodCIDRs = append(view.PodCIDRs, p)
	}
	return view, rejs
}

// unmappedBits is how many prefix bits an IPv4-mapped IPv6 prefix loses
// when written as IPv4.
func unmappedBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		return 96
	}
	return 0
}
