package graph

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

// endpointJSON is the JSON shape of an endpoint.
type endpointJSON struct {
	IP          netip.Addr `json:"ip"`
	Port        uint16     `json:"port"`
	Node        string     `json:"node,omitempty"`
	Zone        string     `json:"zone,omitempty"`
	Local       bool       `json:"local"`
	Ready       bool       `json:"ready"`
	Serving     bool       `json:"serving"`
	Terminating bool       `json:"terminating"`
}

// MarshalJSON writes the endpoint as endpointJSON.
func (e Endpoint) MarshalJSON() ([]byte, error) {
	return json.Marshal(endpointJSON{IP: e.IP, Port: e.Port, Node: e.Node(), Zone: e.Zone(),
		Local: e.Local, Ready: e.Ready, Serving: e.Serving, Terminating: e.Terminating})
}

// UnmarshalJSON reads an endpointJSON.
func (e *Endpoint) UnmarshalJSON(b []byte) error {
	var j endpointJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Endpoint{IP: j.IP, Port: j.Port, Place: PlaceOf(j.Node, j.Zone),
		Local: j.Local, Ready: j.Ready, Serving: j.Serving, Terminating: j.Terminating}
	return nil
}

// servicePortJSON is the documented JSON shape of a service port (see
// docs/graph-json.md). Lists are never null, so the output is stable.
type servicePortJSON struct {
	Service                  string            `json:"service"`
	Port                     string            `json:"port"`
	Protocol                 Protocol          `json:"protocol"`
	ClusterIPs               []netip.Addr      `json:"clusterIPs"`
	ServicePort              uint16            `json:"servicePort"`
	NodePort                 uint16            `json:"nodePort"`
	ExternalIPs              []netip.Addr      `json:"externalIPs"`
	LoadBalancerIPs          []netip.Addr      `json:"loadBalancerIPs"`
	LoadBalancerSourceRanges []netip.Prefix    `json:"loadBalancerSourceRanges"`
	SessionAffinity          SessionAffinity   `json:"sessionAffinity"`
	InternalTrafficPolicy    TrafficPolicy     `json:"internalTrafficPolicy"`
	ExternalTrafficPolicy    TrafficPolicy     `json:"externalTrafficPolicy"`
	HealthCheckNodePort      uint16            `json:"healthCheckNodePort"`
	UsableFamilies           FamilySet         `json:"usableFamilies"`
	InternalEndpoints        EndpointList      `json:"internalEndpoints"`
	ExternalEndpoints        EndpointList      `json:"externalEndpoints"`
	ShortCircuitEndpoints    EndpointList      `json:"shortCircuitEndpoints"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// MarshalJSON renders the service port in the documented shape.
func (sp *ServicePort) MarshalJSON() ([]byte, error) {
	return json.Marshal(servicePortJSON{
		Service:                  sp.Name.Service(),
		Port:                     sp.Name.Port,
		Protocol:                 sp.Name.Protocol,
		ClusterIPs:               nonNil(sp.ClusterIPs),
		ServicePort:              sp.Port,
		NodePort:                 sp.NodePort,
		ExternalIPs:              nonNil(sp.ExternalIPs),
		LoadBalancerIPs:          nonNil(sp.LoadBalancerIPs),
		LoadBalancerSourceRanges: nonNil(sp.LoadBalancerSourceRanges),
		SessionAffinity:          sp.SessionAffinity,
		InternalTrafficPolicy:    sp.InternalTrafficPolicy,
		ExternalTrafficPolicy:    sp.ExternalTrafficPolicy,
		HealthCheckNodePort:      sp.HealthCheckNodePort,
		UsableFamilies:           sp.UsableFamilies,
		InternalEndpoints:        sp.InternalEndpoints,
		ExternalEndpoints:        sp.ExternalEndpoints,
		ShortCircuitEndpoints:    sp.ShortCircuitEndpoints,
		Annotations:              sp.Annotations,
	})
}

// UnmarshalJSON reads the documented shape back.
func (sp *ServicePort) UnmarshalJSON(b []byte) error {
	var j servicePortJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	ns, name, ok := strings.Cut(j.Service, "/")
	if !ok {
		return fmt.Errorf("service %q is not namespace/name", j.Service)
	}
	*sp = ServicePort{
		Name:                     ServicePortName{Namespace: ns, Name: name, Port: j.Port, Protocol: j.Protocol},
		ClusterIPs:               nilIfEmpty(j.ClusterIPs),
		Port:                     j.ServicePort,
		NodePort:                 j.NodePort,
		ExternalIPs:              nilIfEmpty(j.ExternalIPs),
		LoadBalancerIPs:          nilIfEmpty(j.LoadBalancerIPs),
		LoadBalancerSourceRanges: nilIfEmpty(j.LoadBalancerSourceRanges),
		SessionAffinity:          j.SessionAffinity,
		InternalTrafficPolicy:    j.InternalTrafficPolicy,
		ExternalTrafficPolicy:    j.ExternalTrafficPolicy,
		HealthCheckNodePort:      j.HealthCheckNodePort,
		UsableFamilies:           j.UsableFamilies,
		InternalEndpoints:        j.InternalEndpoints,
		ExternalEndpoints:        j.ExternalEndpoints,
		ShortCircuitEndpoints:    j.ShortCircuitEndpoints,
		Annotations:              j.Annotations,
	}
	return nil
}

type snapshotJSON struct {
	Node         string         `json:"node"`
	Zone         string         `json:"zone"`
	NodeIPs      []netip.Addr   `json:"nodeIPs"`
	PodCIDRs     []netip.Prefix `json:"podCIDRs"`
	Peers        []peerJSON     `json:"peers"`
	ServicePorts []*ServicePort `json:"servicePorts"`
}

type peerJSON struct {
	Name     string         `json:"name"`
	Zone     string         `json:"zone"`
	IPs      []netip.Addr   `json:"ips"`
	PodCIDRs []netip.Prefix `json:"podCIDRs"`
}

// MarshalJSON renders the snapshot as {"node": ..., "servicePorts": [...]}.
func (s Snapshot) MarshalJSON() ([]byte, error) {
	peers := make([]peerJSON, 0, len(s.Peers))
	for _, p := range s.Peers {
		peers = append(peers, peerJSON{Name: p.Name, Zone: p.Zone, IPs: nonNil(p.IPs), PodCIDRs: nonNil(p.PodCIDRs)})
	}
	return json.Marshal(snapshotJSON{
		Node:         s.Node.Name,
		Zone:         s.Node.Zone,
		NodeIPs:      nonNil(s.Node.IPs),
		PodCIDRs:     nonNil(s.Node.PodCIDRs),
		Peers:        peers,
		ServicePorts: nonNil(s.ServicePorts),
	})
}

// UnmarshalJSON reads a snapshot back.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	var j snapshotJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Snapshot{
		Node:         Node{Name: j.Node, Zone: j.Zone, IPs: nilIfEmpty(j.NodeIPs), PodCIDRs: nilIfEmpty(j.PodCIDRs)},
		ServicePorts: nilIfEmpty(j.ServicePorts),
	}
	for _, p := range j.Peers {
		s.Peers = append(s.Peers, Node{Name: p.Name, Zone: p.Zone, IPs: nilIfEmpty(p.IPs), PodCIDRs: nilIfEmpty(p.PodCIDRs)})
	}
	return nil
}
