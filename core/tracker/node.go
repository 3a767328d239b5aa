package tracker

import (
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
	v1 "k8s.io/api/core/v1"
)

// NodeView reduces a Node to what the graph needs: its zone label and its
// primary IPs (first InternalIP of each family, else first ExternalIP; the
// family of the first address found comes first), as upstream picks NodePort
// addresses by default.
func NodeView(n *v1.Node) graph.Node {
	view := graph.Node{Name: n.Name, Zone: n.Labels[build.LabelZone]}
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
	return view
}
