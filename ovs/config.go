package ovs

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

// Options are the --ovs-* flags.
type Options struct {
	Bridge         string
	RunDir         string
	DatapathType   string
	UplinkPort     string
	UplinkNextHop  string
	GatewayMAC     string
	GatewayIPs     []string
	NodeIPs        []string
	HairpinIPs     []string
	CtZone         uint16
	ConnectTimeout time.Duration
	PacketInRate   int
}

// AddFlags adds the OVS driver's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Bridge, "ovs-bridge", "br-sy", "ovs: the bridge to program (created if missing)")
	fs.StringVar(&o.RunDir, "ovs-rundir", "/var/run/openvswitch", "ovs: directory of db.sock, BRIDGE.mgmt and the ovs-vswitchd control socket")
	fs.StringVar(&o.DatapathType, "ovs-datapath-type", "system", "ovs: datapath type of a bridge this driver creates (system or netdev)")
	fs.StringVar(&o.UplinkPort, "ovs-uplink-port", "", "ovs: port traffic for other nodes and the outside leaves through (none: such traffic is dropped)")
	fs.StringVar(&o.UplinkNextHop, "ovs-uplink-next-hop-mac", "", "ovs: MAC of the router behind the uplink")
	fs.StringVar(&o.GatewayMAC, "ovs-gateway-mac", "0a:53:59:00:00:01", "ovs: MAC of the bridge's virtual router (pods' gateway, source of routed packets)")
	fs.StringSliceVar(&o.GatewayIPs, "ovs-gateway-ips", nil, "ovs: pods' gateway addresses (one per family), answered by the bridge")
	fs.StringSliceVar(&o.NodeIPs, "ovs-node-ips", nil, "ovs: addresses NodePorts listen on and masquerade uses (default: the Node's primary IPs)")
	fs.StringSliceVar(&o.HairpinIPs, "ovs-hairpin-ips", []string{"169.254.255.253", "fdff:5359::fffd"}, "ovs: virtual sources for pods reaching themselves through a Service")
	fs.Uint16Var(&o.CtZone, "ovs-ct-zone", 0x5359, "ovs: conntrack zone for DNAT (this value + 1 is the SNAT zone)")
	fs.DurationVar(&o.ConnectTimeout, "ovs-connect-timeout", 10*time.Second, "ovs: give up starting if OVS does not answer within this time")
	fs.IntVar(&o.PacketInRate, "ovs-packet-in-rate", 200, "ovs: most rejects/neighbour replies per second crafted for packet-ins")
}

// pipelineConfig checks the options and builds the pipeline's config.
func (o *Options) pipelineConfig() (pipeline.Config, error) {
	var errs []error
	c := pipeline.Config{CtZone: o.CtZone, ControllerID: ofconn.ControllerID}
	if o.Bridge == "" {
		errs = append(errs, errors.New("--ovs-bridge is empty"))
	}
	if o.DatapathType != "system" && o.DatapathType != "netdev" {
		errs = append(errs, fmt.Errorf("--ovs-datapath-type %q: want system or netdev", o.DatapathType))
	}
	if o.CtZone == 0xffff {
		errs = append(errs, errors.New("--ovs-ct-zone must leave room for the SNAT zone (< 65535)"))
	}
	mac, err := net.ParseMAC(o.GatewayMAC)
	if err != nil {
		errs = append(errs, fmt.Errorf("--ovs-gateway-mac: %w", err))
	}
	c.GatewayMAC = mac
	if o.UplinkNextHop != "" {
		if c.UplinkNextHopMAC, err = net.ParseMAC(o.UplinkNextHop); err != nil {
			errs = append(errs, fmt.Errorf("--ovs-uplink-next-hop-mac: %w", err))
		}
	} else if o.UplinkPort != "" {
		errs = append(errs, errors.New("--ovs-uplink-port needs --ovs-uplink-next-hop-mac"))
	}
	parse := func(flag string, in []string, onePerFamily bool) []netip.Addr {
		var out []netip.Addr
		var fams graph.FamilySet
		for _, s := range in {
			ip, err := netip.ParseAddr(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("--%s: %q is not an IP address", flag, s))
				continue
			}
			ip = ip.Unmap()
			if onePerFamily && fams.Has(graph.FamilyOf(ip)) {
				errs = append(errs, fmt.Errorf("--%s: more than one %s address", flag, graph.FamilyOf(ip)))
				continue
			}
			fams = fams.With(graph.FamilyOf(ip))
			out = append(out, ip)
		}
		return out
	}
	c.GatewayIPs = parse("ovs-gateway-ips", o.GatewayIPs, true)
	c.NodeIPs = parse("ovs-node-ips", o.NodeIPs, true)
	c.HairpinIPs = parse("ovs-hairpin-ips", o.HairpinIPs, true)
	if o.PacketInRate < 1 {
		errs = append(errs, errors.New("--ovs-packet-in-rate must be at least 1"))
	}
	return c, errors.Join(errs...)
}

func newFlagSet() *pflag.FlagSet { return pflag.NewFlagSet("ovs", pflag.ContinueOnError) }
