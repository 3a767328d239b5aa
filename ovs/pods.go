package ovs

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

// Interface external_ids a CNI sets on a pod's port (docs/ovs.md).
const (
	KeyPodIPs      = "switchyard.io/pod-ips" // comma-separated, one per family
	KeyPodMAC      = "switchyard.io/pod-mac" // the pod side's MAC
	KeyPodName     = "switchyard.io/pod"     // namespace/name, for logs
	KeyAttachedMAC = "attached-mac"          // OVS convention, used when pod-mac is absent
)

// portsFromInterfaces finds the uplink's OpenFlow port and the pods among
// a bridge's interfaces. Interfaces with unusable external_ids are
// reported and left out.
func portsFromInterfaces(ifaces []ovsdb.Interface, uplink string) (uplinkPort uint32, pods []pipeline.Pod, problems []string) {
	for _, i := range ifaces {
		if i.OFPort <= 0 {
			continue
		}
		if uplink != "" && i.Name == uplink {
			uplinkPort = uint32(i.OFPort)
			continue
		}
		if _, ok := i.ExternalIDs[KeyPodIPs]; !ok {
			continue // not a pod (the bridge's own port, another CNI's port)
		}
		p, err := podFrom(i)
		if err != nil {
			problems = append(problems, fmt.Sprintf("interface %s: %v", i.Name, err))
			continue
		}
		pods = append(pods, p)
	}
	return uplinkPort, pods, problems
}

func podFrom(i ovsdb.Interface) (pipeline.Pod, error) {
	p := pipeline.Pod{Name: i.ExternalIDs[KeyPodName], Port: uint32(i.OFPort)}
	if p.Name == "" {
		p.Name = i.Name
	}
	macText := i.ExternalIDs[KeyPodMAC]
	if macText == "" {
		macText = i.ExternalIDs[KeyAttachedMAC]
	}
	mac, err := net.ParseMAC(macText)
	if err != nil {
		return p, fmt.Errorf("%s/%s %q: %v", KeyPodMAC, KeyAttachedMAC, macText, err)
	}
	p.MAC = mac
	seen := map[bool]bool{}
	for _, s := range strings.Split(i.ExternalIDs[KeyPodIPs], ",") {
		ip, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return p, fmt.Errorf("%s: %q is not an IP address", KeyPodIPs, s)
		}
		ip = ip.Unmap()
		if seen[ip.Is4()] {
			return p, fmt.Errorf("%s: more than one address of a family", KeyPodIPs)
		}
		seen[ip.Is4()] = true
		p.IPs = append(p.IPs, ip)
	}
	return p, nil
}
