package ovs

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

// The encapsulations between nodes (--ovs-encap).
const (
	EncapVXLAN  = "vxlan"
	EncapGeneve = "geneve"
	EncapNone   = "none" // routed: the host, or the network, carries pod CIDRs
)

// KeyRole marks the ports the driver creates: "gateway", "tunnel".
const KeyRole = "switchyard.io/role"

// TunnelPortName is the overlay's tunnel port on the bridge.
const TunnelPortName = "sy-tun0"

// Options are the --ovs-* flags.
type Options struct {
	Bridge           string
	RunDir           string
	DatapathType     string
	Encap            string
	GatewayInterface string
	RouterMAC        string
	NodeIPs          []string
	VirtualIPs       []string
	NodePortIPs      []string
	ServiceCIDRs     []string
	MTU              int
	NodeFile         string
	IPAMDir          string
	CNIConfDir       string
	CNIBinDir        string
	CNIBinary        string
	CtZone           uint16
	NullSNAT         string
	ConnectTimeout   time.Duration
	PacketInRate     int

	// HostNetNS is the network namespace holding the node's interfaces,
	// routes and nftables ("" for switchyard's own, as `switchyard run`
	// always has it). Not a flag: for programs that embed the driver; the
	// tests run each node of their world in a namespace of its own.
	HostNetNS string
}

// AddFlags adds the OVS driver's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Bridge, "ovs-bridge", "br-sy", "ovs: the bridge of the node's pods (created if missing)")
	fs.StringVar(&o.RunDir, "ovs-rundir", "/var/run/openvswitch", "ovs: directory of db.sock, BRIDGE.mgmt and the ovs-vswitchd control socket")
	fs.StringVar(&o.DatapathType, "ovs-datapath-type", "system", "ovs: datapath type of a bridge this driver creates (system or netdev)")
	fs.StringVar(&o.Encap, "ovs-encap", EncapVXLAN, "ovs: how pods reach other nodes' pods: vxlan or geneve (an overlay: a tunnel port, a flow per node), or none (routed: the host routes each node's pod CIDR to its node IP, or the network routes them)")
	fs.StringVar(&o.GatewayInterface, "ovs-gateway-interface", "sy-gw0", "ovs: the bridge's internal port that is the host's side of the pod network (holds each pod CIDR's first address)")
	fs.StringVar(&o.RouterMAC, "ovs-router-mac", "0a:53:59:00:00:01", "ovs: MAC of the bridge's virtual router (what pods and the host reach every address through)")
	fs.StringSliceVar(&o.NodeIPs, "ovs-node-ips", nil, "ovs: addresses NodePorts listen on (default: the Node's primary IPs)")
	fs.StringSliceVar(&o.VirtualIPs, "ovs-virtual-ips", []string{"169.254.255.253", "fdff:5359::fffd"}, "ovs: one per family: next hop of the host's routes into the bridge and source of connections the bridge masquerades towards the host")
	fs.StringSliceVar(&o.NodePortIPs, "ovs-nodeport-ips", []string{"169.254.255.252", "fdff:5359::fffc"}, "ovs: one per family: where the host DNATs NodePort traffic to the node's addresses so that it enters the bridge")
	fs.StringSliceVar(&o.ServiceCIDRs, "ovs-service-cidrs", nil, "ovs: the cluster's Service CIDRs (kube-apiserver's --service-cluster-ip-range): the host routes each into the bridge whole instead of a route per ClusterIP (recommended on large clusters: see docs/ovs.md)")
	fs.IntVar(&o.MTU, "ovs-mtu", 0, "ovs: MTU of the pods' interfaces (0: the MTU of the interface holding the node IP, less the tunnel's overhead)")
	fs.StringVar(&o.NodeFile, "ovs-node-file", "/var/run/switchyard/ovs-node.json", "ovs: where the node's pod network (pod CIDRs, gateways, MTU) is written for switchyard-cni")
	fs.StringVar(&o.IPAMDir, "ovs-ipam-dir", "/var/lib/cni/networks", "ovs: where switchyard-cni keeps its address allocations (one directory per network)")
	fs.StringVar(&o.CNIConfDir, "ovs-cni-conf-dir", "/etc/cni/net.d", "ovs: where `switchyard install` writes the CNI network configuration ("+ConfListName+")")
	fs.StringVar(&o.CNIBinDir, "ovs-cni-bin-dir", "/opt/cni/bin", "ovs: where `switchyard install` puts switchyard-cni (as \"switchyard\", its type)")
	fs.StringVar(&o.CNIBinary, "ovs-cni-binary", "", "ovs: the switchyard-cni binary `switchyard install` copies (default: switchyard-cni next to switchyard)")
	fs.Uint16Var(&o.CtZone, "ovs-ct-zone", 0x5359, "ovs: conntrack zone for DNAT (this value + 1 is the SNAT zone)")
	fs.StringVar(&o.NullSNAT, "ovs-conntrack-null-snat", NullSNATAuto, "ovs: commit connections that are no Service's with a null SNAT (a new source port only on a clash with a tracked connection, as Linux conntrack does): auto (where the datapath's conntrack does it right: the kernel's, or userspace OVS 3.3 and later), on or off (docs/ovs.md, \"Source-port clashes\")")
	fs.DurationVar(&o.ConnectTimeout, "ovs-connect-timeout", 10*time.Second, "ovs: give up starting if OVS does not answer within this time")
	fs.IntVar(&o.PacketInRate, "ovs-packet-in-rate", 200, "ovs: most rejects/neighbour replies per second crafted for packet-ins")
}

// pipelineConfig checks the options and builds the pipeline's config
// (the node's addresses and ports come later, from the graph and OVSDB).
func (o *Options) pipelineConfig() (pipeline.Config, error) {
	var errs []error
	c := pipeline.Config{CtZone: o.CtZone, ControllerID: ofconn.ControllerID}
	if o.Bridge == "" {
		errs = append(errs, errors.New("--ovs-bridge is empty"))
	}
	if o.GatewayInterface == "" || o.GatewayInterface == o.Bridge || o.GatewayInterface == TunnelPortName || len(o.GatewayInterface) > 15 {
		errs = append(errs, fmt.Errorf("--ovs-gateway-interface %q: want a free interface name of at most 15 characters", o.GatewayInterface))
	}
	if o.DatapathType != "system" && o.DatapathType != "netdev" {
		errs = append(errs, fmt.Errorf("--ovs-datapath-type %q: want system or netdev", o.DatapathType))
	}
	if o.Encap != EncapVXLAN && o.Encap != EncapGeneve && o.Encap != EncapNone {
		errs = append(errs, fmt.Errorf("--ovs-encap %q: want vxlan, geneve or none", o.Encap))
	}
	if o.NullSNAT != NullSNATAuto && o.NullSNAT != NullSNATOn && o.NullSNAT != NullSNATOff {
		errs = append(errs, fmt.Errorf("--ovs-conntrack-null-snat %q: want auto, on or off", o.NullSNAT))
	}
	if o.CtZone == 0xffff {
		errs = append(errs, errors.New("--ovs-ct-zone must leave room for the SNAT zone (< 65535)"))
	}
	mac, err := net.ParseMAC(o.RouterMAC)
	if err != nil {
		errs = append(errs, fmt.Errorf("--ovs-router-mac: %w", err))
	}
	c.RouterMAC = mac
	if o.MTU != 0 && (o.MTU < 1280 || o.MTU > 65000) {
		errs = append(errs, fmt.Errorf("--ovs-mtu %d: want 0 (automatic) or 1280..65000", o.MTU))
	}
	for _, p := range []struct{ flag, path string }{{"ovs-node-file", o.NodeFile}, {"ovs-ipam-dir", o.IPAMDir},
		{"ovs-cni-conf-dir", o.CNIConfDir}, {"ovs-cni-bin-dir", o.CNIBinDir}} {
		if !filepath.IsAbs(p.path) || filepath.Clean(p.path) == "/" {
			errs = append(errs, fmt.Errorf("--%s %q is not an absolute path below /", p.flag, p.path))
		}
	}
	parse := func(flag string, in []string) []netip.Addr {
		ips, err := dataplanes.ParseIPFlag(flag, in)
		errs = append(errs, err)
		return ips
	}
	c.NodeIPs = parse("ovs-node-ips", o.NodeIPs)
	c.VirtualIPs = parse("ovs-virtual-ips", o.VirtualIPs)
	c.NodePortIPs = parse("ovs-nodeport-ips", o.NodePortIPs)
	for _, ip := range append(append([]netip.Addr{}, c.VirtualIPs...), c.NodePortIPs...) {
		if !ip.IsLinkLocalUnicast() && !ip.IsPrivate() {
			errs = append(errs, fmt.Errorf("virtual address %s: want a link-local or private address no network uses", ip))
		}
	}
	for _, v := range c.VirtualIPs {
		for _, n := range c.NodePortIPs {
			if v == n {
				errs = append(errs, fmt.Errorf("%s is both a virtual IP and a NodePort IP", v))
			}
		}
	}
	c.ServiceCIDRs = parseServiceCIDRs(o.ServiceCIDRs, c, &errs)
	if o.PacketInRate < 1 {
		errs = append(errs, errors.New("--ovs-packet-in-rate must be at least 1"))
	}
	return c, errors.Join(errs...)
}

// tunnelOverhead is what the encapsulation adds to each packet (outer IP,
// UDP, VXLAN or Geneve header; Geneve without options).
func tunnelOverhead(encap string, underlay6 bool) int {
	if encap == EncapNone {
		return 0
	}
	if underlay6 {
		return 70
	}
	return 50
}

func newFlagSet() *pflag.FlagSet { return pflag.NewFlagSet("ovs", pflag.ContinueOnError) }

// parseServiceCIDRs checks --ovs-service-cidrs: networks (no host bits),
// none a default route, none holding an address the driver routes into
// the bridge for itself or one NodePorts listen on.
func parseServiceCIDRs(in []string, c pipeline.Config, errs *[]error) []netip.Prefix {
	own := append(append(append([]netip.Addr{}, c.VirtualIPs...), c.NodePortIPs...), c.NodeIPs...)
	var out []netip.Prefix
	for _, s := range in {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		switch {
		case err != nil:
			*errs = append(*errs, fmt.Errorf("--ovs-service-cidrs %q: not a CIDR", s))
			continue
		case p != p.Masked():
			*errs = append(*errs, fmt.Errorf("--ovs-service-cidrs %q: has host bits set (the network is %s)", s, p.Masked()))
			continue
		case p.Bits() == 0:
			*errs = append(*errs, fmt.Errorf("--ovs-service-cidrs %q: a default route would take all of the host's traffic", s))
			continue
		}
		for _, ip := range own {
			if p.Contains(ip) {
				*errs = append(*errs, fmt.Errorf("--ovs-service-cidrs %q holds %s, a virtual, NodePort or node address", s, ip))
			}
		}
		out = append(out, p)
	}
	return out
}
