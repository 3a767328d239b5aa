package object

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Labels and annotations the core reads.
const (
	LabelServiceProxyName = "service.kubernetes.io/service-proxy-name"
	LabelHeadless         = v1.IsHeadlessService // "service.kubernetes.io/headless"
	LabelServiceName      = discovery.LabelServiceName
	LabelZone             = v1.LabelTopologyZone
	// AnnotationLastChangeTriggerTime is set by the EndpointSlice
	// controller to when the change behind a slice happened; upstream
	// measures network programming latency from it.
	AnnotationLastChangeTriggerTime = v1.EndpointsLastChangeTriggerTime
)

// Converter makes the core's copies. It shares what repeats across
// objects (each node name and zone, and each pair of them, is kept
// once); the zero value is ready and it is safe for concurrent use.
type Converter struct {
	mu      sync.Mutex
	strings map[string]string
	wheres  map[Where]*Where
}

// Convert is an informer transform: it converts a Service or an
// EndpointSlice, trims a Node (Node), and returns anything else, already
// converted objects included, as it is.
func (c *Converter) Convert(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.Service:
		return c.Service(o), nil
	case *discovery.EndpointSlice:
		return c.EndpointSlice(o), nil
	case *v1.Node:
		return Node(o), nil
	}
	return obj, nil
}

// Service copies what the core reads of s.
func (c *Converter) Service(s *v1.Service) *Service {
	out := &Service{
		Meta:                     Meta{Namespace: s.Namespace, Name: s.Name, ResourceVersion: s.ResourceVersion},
		Annotations:              annotations(s.Annotations),
		Type:                     s.Spec.Type,
		ClusterIP:                s.Spec.ClusterIP,
		ClusterIPs:               s.Spec.ClusterIPs,
		ExternalIPs:              s.Spec.ExternalIPs,
		LoadBalancerSourceRanges: s.Spec.LoadBalancerSourceRanges,
		SessionAffinity:          s.Spec.SessionAffinity,
		ExternalTrafficPolicy:    s.Spec.ExternalTrafficPolicy,
		HealthCheckNodePort:      s.Spec.HealthCheckNodePort,
	}
	out.ProxyName, out.HasProxyName = s.Labels[LabelServiceProxyName]
	_, out.Headless = s.Labels[LabelHeadless]
	if cfg := s.Spec.SessionAffinityConfig; cfg != nil && cfg.ClientIP != nil {
		out.AffinityTimeout = cfg.ClientIP.TimeoutSeconds
	}
	if p := s.Spec.InternalTrafficPolicy; p != nil {
		out.InternalTrafficPolicy = *p
	}
	if len(s.Spec.Ports) > 0 {
		out.Ports = make([]ServicePort, len(s.Spec.Ports))
		for i, p := range s.Spec.Ports {
			out.Ports[i] = ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, NodePort: p.NodePort}
		}
	}
	for _, ing := range s.Status.LoadBalancer.Ingress {
		if ing.IP == "" {
			continue
		}
		in := Ingress{IP: ing.IP}
		if ing.IPMode != nil {
			in.IPMode = *ing.IPMode
		}
		out.Ingress = append(out.Ingress, in)
	}
	return out
}

// EndpointSlice copies what the core reads of s.
func (c *Converter) EndpointSlice(s *discovery.EndpointSlice) *EndpointSlice {
	out := &EndpointSlice{
		Meta:        Meta{Namespace: s.Namespace, Name: s.Name, ResourceVersion: s.ResourceVersion},
		ServiceName: s.Labels[LabelServiceName],
		AddressType: s.AddressType,
	}
	out.ProxyName, out.HasProxyName = s.Labels[LabelServiceProxyName]
	_, out.Headless = s.Labels[LabelHeadless]
	if v, ok := s.Annotations[AnnotationLastChangeTriggerTime]; ok {
		if at, err := time.Parse(time.RFC3339Nano, v); err == nil {
			out.TriggerTime = at
		}
	}
	out.InitialEventsEnd = s.Annotations[metav1.InitialEventsAnnotationKey] == "true"
	if len(s.Ports) > 0 {
		out.Ports = make([]EndpointPort, len(s.Ports))
		for i, p := range s.Ports {
			out.Ports[i] = EndpointPort{Name: p.Name, Protocol: p.Protocol, Port: p.Port}
		}
	}
	if len(s.Endpoints) == 0 {
		return out
	}
	out.Endpoints = make([]Endpoint, len(s.Endpoints))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		ep := &out.Endpoints[i]
		if len(e.Addresses) == 0 {
			ep.NoAddress = true
		} else {
			ep.Address = e.Addresses[0]
		}
		if e.NodeName != nil || e.Zone != nil {
			ep.Where = c.where(Where{NodeName: ptr.Deref(e.NodeName, ""), Zone: ptr.Deref(e.Zone, "")})
		}
		ep.Ready = e.Conditions.Ready == nil || *e.Conditions.Ready
		ep.Serving = e.Conditions.Serving == nil || *e.Conditions.Serving
		ep.Terminating = e.Conditions.Terminating != nil && *e.Conditions.Terminating
		if h := e.Hints; h != nil && (len(h.ForZones) > 0 || len(h.ForNodes) > 0) {
			ep.Hints = &Hints{}
			for _, z := range h.ForZones {
				ep.Hints.ForZones = append(ep.Hints.ForZones, c.intern(z.Name))
			}
			for _, n := range h.ForNodes {
				ep.Hints.ForNodes = append(ep.Hints.ForNodes, c.intern(n.Name))
			}
		}
	}
	return out
}

// where returns the shared copy of w (c.mu held).
func (c *Converter) where(w Where) *Where {
	if c.wheres == nil {
		c.wheres = map[Where]*Where{}
	}
	if p, ok := c.wheres[w]; ok {
		return p
	}
	p := &Where{NodeName: c.intern(w.NodeName), Zone: c.intern(w.Zone)}
	c.wheres[w] = p
	return p
}

// internBytes returns the shared copy of the string b holds (c.mu held),
// making one only the first time.
func (c *Converter) internBytes(b []byte) string {
	if q, ok := c.strings[string(b)]; ok {
		return q
	}
	return c.intern(string(b))
}

// intern returns the shared copy of s (c.mu held).
func (c *Converter) intern(s string) string {
	if c.strings == nil {
		c.strings = map[string]string{}
	}
	if q, ok := c.strings[s]; ok {
		return q
	}
	c.strings[s] = s
	return s
}

func annotations(a map[string]string) map[string]string {
	n := len(a)
	if _, ok := a[v1.LastAppliedConfigAnnotation]; ok {
		n--
	}
	if n == 0 {
		return nil
	}
	out := make(map[string]string, n)
	for k, v := range a {
		if k != v1.LastAppliedConfigAnnotation {
			out[k] = v
		}
	}
	return out
}

// Node trims a Node in place to what the core reads (its name, labels,
// addresses and pod CIDRs stay; managed fields, conditions, images, taints
// and the like go) and returns it. Nodes stay API objects: there are few
// of them next to Services.
func Node(n *v1.Node) *v1.Node {
	n.Status = v1.NodeStatus{Addresses: n.Status.Addresses}
	//lint:ignore SA1019 a deprecated field is trimmed, not read
	n.Spec.Taints, n.Spec.ConfigSource = nil, nil
	n.ManagedFields, n.OwnerReferences, n.Finalizers = nil, nil, nil
	n.GenerateName, n.CreationTimestamp = "", metav1.Time{}
	delete(n.Annotations, v1.LastAppliedConfigAnnotation)
	return n
}

// ServiceOf converts one Service on its own (a Converter shares what
// repeats across many: sources use one).
func ServiceOf(s *v1.Service) *Service { return new(Converter).Service(s) }

// EndpointSliceOf converts one EndpointSlice on its own (see ServiceOf).
func EndpointSliceOf(s *discovery.EndpointSlice) *EndpointSlice {
	return new(Converter).EndpointSlice(s)
}
