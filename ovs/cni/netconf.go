package cni

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
)

// Defaults of the network configuration.
const (
	DefaultBridge    = "br-sy"
	DefaultOVSRunDir = "/var/run/openvswitch"
	DefaultNodeFile  = "/var/run/switchyard/ovs-node.json"
	DefaultIPAMDir   = "/var/lib/cni/networks"
)

// NetConf is the plugin's entry in a CNI network configuration list:
//
//	{"type": "switchyard", "bridge": "br-sy", "ovsRunDir": "/var/run/openvswitch",
//	 "nodeFile": "/var/run/switchyard/ovs-node.json", "ipamDir": "/var/lib/cni/networks"}
//
// Every field but type has the default shown. Allocations are kept under
// ipamDir/<network name>/, one file per address, as host-local keeps them.
type NetConf struct {
	types.PluginConf
	Bridge    string `json:"bridge,omitempty"`
	OVSRunDir string `json:"ovsRunDir,omitempty"`
	NodeFile  string `json:"nodeFile,omitempty"`
	IPAMDir   string `json:"ipamDir,omitempty"`
	// RuntimeConfig.IPs are addresses the runtime asks for (the "ips"
	// capability), as host-local honours them.
	RuntimeConfig struct {
		IPs []string `json:"ips,omitempty"`
	} `json:"runtimeConfig,omitempty"`
}

// ParseNetConf reads and checks the configuration from stdin's bytes.
func ParseNetConf(b []byte) (*NetConf, error) {
	c := &NetConf{}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("network configuration: %w", err)
	}
	if c.Name == "" {
		return nil, fmt.Errorf("network configuration has no name")
	}
	if c.Bridge == "" {
		c.Bridge = DefaultBridge
	}
	if c.OVSRunDir == "" {
		c.OVSRunDir = DefaultOVSRunDir
	}
	if c.NodeFile == "" {
		c.NodeFile = DefaultNodeFile
	}
	if c.IPAMDir == "" {
		c.IPAMDir = DefaultIPAMDir
	}
	for _, p := range []struct{ name, v string }{{"ovsRunDir", c.OVSRunDir}, {"nodeFile", c.NodeFile}, {"ipamDir", c.IPAMDir}} {
		if !filepath.IsAbs(p.v) {
			return nil, fmt.Errorf("network configuration: %s %q is not an absolute path", p.name, p.v)
		}
	}
	if strings.ContainsAny(c.Name, "/\\") || c.Name == "." || c.Name == ".." {
		return nil, fmt.Errorf("network configuration: name %q cannot name a directory", c.Name)
	}
	return c, nil
}

// PodArgs are the CNI_ARGS the plugin reads: the pod's name (from the
// kubelet) and requested addresses (IP=a,b as host-local reads them).
type PodArgs struct {
	types.CommonArgs
	IP                         types.UnmarshallableString `json:"IP,omitempty"`
	K8S_POD_NAMESPACE          types.UnmarshallableString //nolint:revive // CNI_ARGS key
	K8S_POD_NAME               types.UnmarshallableString //nolint:revive // CNI_ARGS key
	K8S_POD_INFRA_CONTAINER_ID types.UnmarshallableString //nolint:revive // CNI_ARGS key
	K8S_POD_UID                types.UnmarshallableString //nolint:revive // CNI_ARGS key
}

// ParsePodArgs reads CNI_ARGS. Unknown keys are refused unless
// IgnoreUnknown=1 is among them (as every plugin reads them).
func ParsePodArgs(s string) (PodArgs, error) {
	var a PodArgs
	if err := types.LoadArgs(s, &a); err != nil {
		return a, fmt.Errorf("CNI_ARGS: %w", err)
	}
	return a, nil
}

// Pod is "namespace/name" when the runtime said which pod this is.
func (a PodArgs) Pod() string {
	if a.K8S_POD_NAME == "" {
		return ""
	}
	return string(a.K8S_POD_NAMESPACE) + "/" + string(a.K8S_POD_NAME)
}

// requestedIPs merges CNI_ARGS IP= and runtimeConfig.ips.
func requestedIPs(c *NetConf, a PodArgs) ([]netip.Addr, error) {
	var raw []string
	if a.IP != "" {
		raw = append(raw, strings.Split(string(a.IP), ",")...)
	}
	raw = append(raw, c.RuntimeConfig.IPs...)
	var out []netip.Addr
	for _, s := range raw {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil { // "ips" may carry a mask
			s = p.Addr().String()
		}
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("requested IP %q is not an address", s)
		}
		out = append(out, ip.Unmap())
	}
	return out, nil
}
