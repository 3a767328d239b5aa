package build

import (
	"fmt"
	"net/netip"
)

// Options tune how objects become graph entries.
type Options struct {
	// ProxyName is the value of the service.kubernetes.io/service-proxy-name
	// label this proxy answers to. Services (and slices) carrying that label
	// with any other value are skipped; with ProxyName empty, every labelled
	// Service is skipped, as upstream kube-proxy does.
	ProxyName string

	// NodePortRange, when set, refuses NodePorts outside it (the API server
	// enforces its --service-node-port-range; a file source does not).
	NodePortRange PortRange

	// Annotations lists the Service annotation keys copied into the graph
	// for drivers that read them.
	Annotations []string

	// ProtectedIPs are addresses no Service may take as an external or
	// load-balancer IP: the API server's (--master). A Service naming one
	// would capture the node's own traffic to it, and switchyard and the
	// kubelet would lose the API server (and could not even see the
	// Service being deleted). Such an IP is refused (ProtectedIP); the rest
	// of the Service is proxied.
	ProtectedIPs []netip.Addr
}

// PortRange is an inclusive port range; the zero value means "no limit".
type PortRange struct {
	Min, Max uint16
}

// DefaultNodePortRange is the API server's default --service-node-port-range.
var DefaultNodePortRange = PortRange{Min: 30000, Max: 32767}

// IsZero reports whether the range is unset.
func (r PortRange) IsZero() bool { return r.Min == 0 && r.Max == 0 }

// Contains reports whether p is in the range (always true when unset).
func (r PortRange) Contains(p int32) bool {
	return r.IsZero() || (p >= int32(r.Min) && p <= int32(r.Max))
}

// String renders the range as "min-max".
func (r PortRange) String() string {
	if r.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d-%d", r.Min, r.Max)
}

// ParsePortRange reads "min-max" (or "" for no limit).
func ParsePortRange(s string) (PortRange, error) {
	if s == "" {
		return PortRange{}, nil
	}
	var lo, hi int
	if n, err := fmt.Sscanf(s, "%d-%d", &lo, &hi); err != nil || n != 2 {
		return PortRange{}, fmt.Errorf("port range %q is not min-max", s)
	}
	if lo < 1 || hi > 65535 || lo > hi {
		return PortRange{}, fmt.Errorf("port range %q must satisfy 1 <= min <= max <= 65535", s)
	}
	return PortRange{Min: uint16(lo), Max: uint16(hi)}, nil
}
