package engine

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// OwnerKey names what owns a set of flows and groups in the state (and
// what a refusal holds back, dataplanes.Holds): the static pipeline, a
// pod's port, a peer node, a UDP frontend's later fragments, or a service
// port. It is a string, as the state keeps one per flow; make one only
// with the functions below. The zero key owns nothing: a flow two owners
// want is pinned to none.
type OwnerKey string

const (
	StaticOwner   OwnerKey = "static"
	NoOwner       OwnerKey = ""
	servicePrefix          = "sp/"
)

func PodOwner(port uint32) OwnerKey         { return OwnerKey(fmt.Sprintf("pod/%d", port)) }
func PeerOwner(node string) OwnerKey        { return OwnerKey("peer/" + node) }
func FragmentsOwner(ip netip.Addr) OwnerKey { return OwnerKey("udpfrag/" + ip.String()) }

// ServicePortOwner is a service port's key: "sp/NAMESPACE/NAME:PORT/PROTOCOL".
func ServicePortOwner(n graph.ServicePortName) OwnerKey { return OwnerKey(servicePrefix + n.String()) }

// servicePort is the service port o is the key of. Namespaces, names and
// port names are DNS labels: none holds a '/' or a ':'.
func (o OwnerKey) servicePort() (graph.ServicePortName, bool) {
	rest, ok := strings.CutPrefix(string(o), servicePrefix)
	ns, rest, ok1 := strings.Cut(rest, "/")
	i := strings.LastIndex(rest, "/")
	if !ok || !ok1 || i < 0 {
		return graph.ServicePortName{}, false
	}
	name, port, ok2 := strings.Cut(rest[:i], ":")
	return graph.ServicePortName{Namespace: ns, Name: name, Port: port, Protocol: graph.Protocol(rest[i+1:])}, ok2
}
