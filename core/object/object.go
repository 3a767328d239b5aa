// Package object holds the core's own copies of the API objects it reads:
// of each Service and EndpointSlice, only the fields upstream kube-proxy's
// proxy reads, laid out flat. Sources convert what they receive (the kube
// source inside its informers, so the caches hold these copies and not the
// API types) and hand the copies to the core; nothing else of an object is
// kept. The API types, even trimmed, were the largest part of the live
// heap; these copies are less than half of them (docs/scale.md, "RSS").
//
// Validation is not done here: a copy keeps the raw values (addresses as
// strings, ports as numbers) so that core/build can refuse them with the
// field they came from. The only interpretation is the API's own defaults
// for unset endpoint conditions (ready and serving when unset, not
// terminating), as upstream reads them.
package object

import (
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// Service is what the core reads of a v1.Service.
type Service struct {
	Meta
	// ProxyName is the service.kubernetes.io/service-proxy-name label
	// (HasProxyName: the label is set, maybe to "").
	ProxyName    string
	HasProxyName bool
	// Headless: the service.kubernetes.io/headless label is set.
	Headless bool
	// Annotations are every annotation but kubectl's last-applied one
	// (drivers may copy some into the graph); nil when there are none.
	Annotations map[string]string

	Type                     v1.ServiceType
	ClusterIP                string
	ClusterIPs               []string
	ExternalIPs              []string
	LoadBalancerSourceRanges []string
	SessionAffinity          v1.ServiceAffinity
	// AffinityTimeout is spec.sessionAffinityConfig.clientIP.timeoutSeconds
	// (nil when unset).
	AffinityTimeout       *int32
	ExternalTrafficPolicy v1.ServiceExternalTrafficPolicy
	// InternalTrafficPolicy is "" when unset.
	InternalTrafficPolicy v1.ServiceInternalTrafficPolicy
	HealthCheckNodePort   int32
	Ports                 []ServicePort
	// Ingress is status.loadBalancer.ingress, the entries with an IP.
	Ingress []Ingress
}

// ServicePort is one entry of spec.ports.
type ServicePort struct {
	Name     string
	Protocol v1.Protocol
	Port     int32
	NodePort int32
}

// Ingress is one load-balancer ingress point with an IP.
type Ingress struct {
	IP string
	// IPMode is "" when unset.
	IPMode v1.LoadBalancerIPMode
}

// EndpointSlice is what the core reads of a discovery/v1 EndpointSlice.
type EndpointSlice struct {
	Meta
	// ServiceName is the kubernetes.io/service-name label ("" when unset).
	ServiceName string
	// ProxyName, HasProxyName and Headless: as Service's, from the slice's
	// own labels.
	ProxyName    string
	HasProxyName bool
	Headless     bool
	// TriggerTime is the endpoints.kubernetes.io/last-change-trigger-time
	// annotation; zero when unset or not a time.
	TriggerTime time.Time
	AddressType discovery.AddressType
	Ports       []EndpointPort
	Endpoints   []Endpoint
	// InitialEventsEnd: the object carried the
	// k8s.io/initial-events-end annotation, which marks the bookmark that
	// ends a WatchList's initial events (GetAnnotations reports it).
	InitialEventsEnd bool
}

// EndpointPort is one entry of ports; nil fields were unset.
type EndpointPort struct {
	Name     *string
	Protocol *v1.Protocol
	Port     *int32
}

// Endpoint is one entry of endpoints.
type Endpoint struct {
	// Address is the first address, the one upstream uses ("" with
	// NoAddress when the list is empty).
	Address string
	// Where is the endpoint's node and zone; nil when neither is set.
	// Endpoints on one node share one.
	Where *Where
	// Hints are nil when the endpoint has none.
	Hints *Hints
	// The conditions with the API's defaults for unset ones: ready and
	// serving unless false, terminating only when true.
	Ready, Serving, Terminating bool
	NoAddress                   bool
}

// Where is the node and zone of endpoints ("" when unset).
type Where struct {
	NodeName, Zone string
}

// NodeName is the endpoint's node ("" when unset).
func (e *Endpoint) NodeName() string {
	if e.Where == nil {
		return ""
	}
	return e.Where.NodeName
}

// Zone is the endpoint's zone ("" when unset).
func (e *Endpoint) Zone() string {
	if e.Where == nil {
		return ""
	}
	return e.Where.Zone
}

// Hints are an endpoint's topology hints.
type Hints struct {
	ForZones []string
	ForNodes []string
}
