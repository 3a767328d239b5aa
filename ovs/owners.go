package ovs

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// ownerKey names what owns a set of flows and groups in the state (and
// what a refusal holds back, dataplanes.Holds): the static pipeline, a
// pod's port, a peer node, a UDP frontend's later fragments, or a service
// port. It is a string, as the state keeps one per flow; make one only
// with the functions below. The zero key owns nothing: a flow two owners
// want is pinned to none.
type ownerKey string

const (
	staticOwner   ownerKey = "static"
	noOwner       ownerKey = ""
	servicePrefix          = "sp/"
)

func podOwner(port uint32) ownerKey         { return ownerKey(fmt.Sprintf("pod/%d", port)) }
func peerOwner(node string) ownerKey        { return ownerKey("peer/" + node) }
func fragmentsOwner(ip netip.Addr) ownerKey { return ownerKey("udpfrag/" + ip.String()) }

// servicePortOwner is a service port's key: "sp/NAMESPACE/NAME:PORT/PROTOCOL".
func servicePortOwner(n graph.ServicePortName) ownerKey { return ownerKey(servicePrefix + n.String()) }

// servicePort is the service port o is the key of. Namespaces, names and
// port names are DNS labels: none holds a '/' or a ':'.
func (o ownerKey) servicePort() (graph.ServicePortName, bool) {
	rest, ok := strings.CutPrefix(string(o), servicePrefix)
	ns, rest, ok1 := strings.Cut(rest, "/")
	i := strings.LastIndex(rest, "/")
	if !ok || !ok1 || i < 0 {
		return graph.ServicePortName{}, false
	}
	name, port, ok2 := strings.Cut(rest[:i], ":")
	return graph.ServicePortName{Namespace: ns, Name: name, Port: port, Protocol: graph.Protocol(rest[i+1:])}, ok2
}
