package ovs

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

// KeyRole marks the ports the driver creates: "gateway", "tunnel".
const KeyRole = "switchyard.io/role"

// bridgePorts is what the driver reads of the bridge's interfaces.
type bridgePorts struct {
	gatewayPort uint32
	gatewayMAC  net.HardwareAddr
	tunnelPort  uint32
	pods        []podPort
	problems    []string
}

// podPort is a pod and what the driver needs to tell switchyard-cni it is
// programmed.
type podPort struct {
	pipeline.Pod
	iface      string
	programmed string // the interface's switchyard.io/programmed
}

// portsFromInterfaces finds the gateway, the tunnel and the pods among a
// bridge's interfaces. Pods (interfaces with switchyard.io/pod-ips) whose
// external_ids are unusable are reported and left out.
func portsFromInterfaces(ifaces []ovsdb.Interface, gateway string) bridgePorts {
	var bp bridgePorts
	for _, i := range ifaces {
		if i.OFPort <= 0 {
			continue
		}
		switch {
		case i.Name == gateway:
			bp.gatewayPort = uint32(i.OFPort)
			bp.gatewayMAC, _ = net.ParseMAC(i.MAC) // nil until OVS reports it
			continue
		case i.Name == TunnelPortName:
			bp.tunnelPort = uint32(i.OFPort)
			continue
		}
		if _, ok := i.ExternalIDs[podport.KeyPodIPs]; !ok {
			continue // not a pod (the bridge's own port, another component's)
		}
		p, err := podFrom(i)
		if err != nil {
			bp.problems = append(bp.problems, fmt.Sprintf("interface %s: %v", i.Name, err))
			continue
		}
		bp.pods = append(bp.pods, podPort{Pod: p, iface: i.Name, programmed: i.ExternalIDs[podport.KeyProgrammed]})
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
