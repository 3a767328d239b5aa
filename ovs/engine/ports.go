package engine

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
	"github.com/switchyard-proxy/switchyard/ovs/podport"
)

// KeyAttachedMAC is OVS's convention for the MAC behind a port, read when
// a pod's port has no switchyard.io/pod-mac.
const KeyAttachedMAC = "attached-mac"

// Ports is what the driver reads of the bridge's interfaces.
type Ports struct {
	GatewayPort uint32
	GatewayMAC  net.HardwareAddr
	TunnelPort  uint32
	Pods        []PodPort
	Problems    []string
}

// PodPort is a pod and what the driver needs to tell switchyard-cni it is
// programmed.
type PodPort struct {
	pipeline.Pod
	Iface      string
	Programmed string // the interface's switchyard.io/programmed
}

// PortsFromInterfaces finds the gateway, the tunnel and the pods among a
// bridge's interfaces (gateway and tunnel are their names). Pods
// (interfaces with switchyard.io/pod-ips) whose
// external_ids are unusable are reported and left out.
func PortsFromInterfaces(ifaces []ovsdb.Interface, gateway, tunnel string) Ports {
	var bp Ports
	for _, i := range ifaces {
		if i.OFPort <= 0 {
			continue
		}
		switch {
		case i.Name == gateway:
			bp.GatewayPort = uint32(i.OFPort)
			bp.GatewayMAC, _ = net.ParseMAC(i.MAC) // nil until OVS reports it
			continue
		case i.Name == tunnel:
			bp.TunnelPort = uint32(i.OFPort)
			continue
		}
		if _, ok := i.ExternalIDs[podport.KeyPodIPs]; !ok {
			continue // not a pod (the bridge's own port, another component's)
		}
		p, err := podFrom(i)
		if err != nil {
			bp.Problems = append(bp.Problems, fmt.Sprintf("interface %s: %v", i.Name, err))
			continue
		}
		bp.Pods = append(bp.Pods, PodPort{Pod: p, Iface: i.Name, Programmed: i.ExternalIDs[podport.KeyProgrammed]})
	}
	return bp
}

func podFrom(i ovsdb.Interface) (pipeline.Pod, error) {
	p := pipeline.Pod{Name: i.ExternalIDs[podport.KeyPodName], Port: uint32(i.OFPort)}
	if p.Name == "" {
		p.Name = i.Name
	}
	macText := i.ExternalIDs[podport.KeyPodMAC]
	if macText == "" {
		macText = i.ExternalIDs[KeyAttachedMAC]
	}
	mac, err := net.ParseMAC(macText)
	if err != nil {
		return p, fmt.Errorf("%s/%s %q: %v", podport.KeyPodMAC, KeyAttachedMAC, macText, err)
	}
	p.MAC = mac
	seen := map[bool]bool{}
	for _, s := range strings.Split(i.ExternalIDs[podport.KeyPodIPs], ",") {
		ip, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return p, fmt.Errorf("%s: %q is not an IP address", podport.KeyPodIPs, s)
		}
		ip = ip.Unmap()
		if seen[ip.Is4()] {
			return p, fmt.Errorf("%s: more than one address of a family", podport.KeyPodIPs)
		}
		seen[ip.Is4()] = true
		p.IPs = append(p.IPs, ip)
	}
	return p, nil
}
