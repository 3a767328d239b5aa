package hns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"k8s.io/klog/v2"
)

func init() {
	dataplanes.Register("hns", &Factory{})
}

// Factory registers the HNS driver as dataplane "hns".
type Factory struct {
	Options Options
	// NewClient makes the HNS client (tests set a simulator); nil: the
	// platform's (hcn on Windows).
	NewClient func() (Client, error)

	// overlay is set once New found an overlay network: such a network is
	// single-stack (Capabilities says so from then on).
	overlay bool
}

// Description implements dataplanes.Factory.
func (f *Factory) Description() string {
	return "Windows HNS: load balancers through hcsshim's hcn (DSR, preserve-DIP, overlay remote endpoints, in-place modify)"
}

// Capabilities implements dataplanes.Factory. Once New has found an
// overlay network, the node's second family is a gap: HNS overlay networks
// are single-stack (upstream winkernel's dualStackCompatible), serving the
// node's primary family, IPv4 unless --hns-node-ips starts with an IPv6
// address (the Node's own order is known only later).
func (f *Factory) Capabilities() dataplanes.Capabilities {
	c := f.baseCapabilities()
	if f.overlay {
		other := dataplanes.IPv6
		if len(f.Options.NodeIPs) > 0 {
			if ip, err := netip.ParseAddr(f.Options.NodeIPs[0]); err == nil && ip.Is6() {
				other = dataplanes.IPv4
			}
		}
		c.Supported = slices.DeleteFunc(c.Supported, func(x dataplanes.Capability) bool { return x == other })
		c.Gaps[other] = "HNS overlay networks are single-stack: only the node's primary family is served (as upstream winkernel)"
	}
	return c
}

func (f *Factory) baseCapabilities() dataplanes.Capabilities {
	return dataplanes.Capabilities{
		Supported: []dataplanes.Capability{dataplanes.IPv4, dataplanes.IPv6, dataplanes.TCP, dataplanes.UDP, dataplanes.SCTP,
			dataplanes.NodePort, dataplanes.ExternalIPs, dataplanes.LoadBalancerIPs, dataplanes.SessionAffinity,
			dataplanes.ExternalLocal, dataplanes.InternalLocal},
		Gaps: map[dataplanes.Capability]string{
			dataplanes.SourceRanges:     "HNS load balancers have no source filter",
			dataplanes.AffinityTimeout:  "HNS SourceIP distribution has no timeout: a client stays on its endpoint while it exists",
			dataplanes.ShortCircuit:     "HNS cannot tell a pod's traffic to an external frontend from outside traffic",
			dataplanes.RejectNoEndpoint: "HNS cannot reject: a frontend without endpoints gets no load balancer",
			dataplanes.MixedTargetPorts: "an HNS load balancer has one internal port: endpoints on another target port are left out",
			dataplanes.PodNetwork:       "on Windows the CNI and its HNS network are the pod network; this driver programs Services on it",
			dataplanes.UpstreamSources:  "without DSR, HNS SNATs every load-balanced connection to the load balancer's SourceVIP, a pod's to a ClusterIP included (docs/hns.md S2)",
		},
	}
}

// Annotations implements dataplanes.AnnotationReader.
func (f *Factory) Annotations() []string { return []string{AnnotationPreserveDestination} }

// AddFlags implements dataplanes.Factory.
func (f *Factory) AddFlags(fs *pflag.FlagSet) { f.Options.AddFlags(fs) }

// New implements dataplanes.Factory.
func (f *Factory) New(_ context.Context, env dataplanes.Env) (dataplanes.Driver, error) {
	if err := f.Options.validate(); err != nil {
		return nil, err
	}
	newClient := f.NewClient
	if newClient == nil {
		newClient = platformClient
	}
	c, err := newClient()
	if err != nil {
		return nil, err
	}
	d, err := NewDriver(c, f.Options, env)
	if err != nil {
		return nil, err
	}
	f.overlay = d.network.IsOverlay()
	return d, nil
}

func (o *Options) validate() error {
	var errs []error
	if o.NetworkName == "" {
		errs = append(errs, errors.New("--hns-network-name is empty"))
	}
	if o.SourceVIP != "" {
		if _, err := netip.ParseAddr(o.SourceVIP); err != nil {
			errs = append(errs, fmt.Errorf("--hns-source-vip %q is not an IP address", o.SourceVIP))
		}
	}
	if _, err := dataplanes.ParseIPFlag("hns-node-ips", o.NodeIPs); err != nil {
		errs = append(errs, err)
	}
	if o.StateFile == "" {
		errs = append(errs, errors.New("--hns-state-file is empty"))
	}
	return errors.Join(errs...)
}

// rendered is what `switchyard render --dataplane hns` prints.
type rendered struct {
	Note            string         `json:"note"`
	LoadBalancers   []LoadBalancer `json:"loadBalancers"`
	RemoteEndpoints []Endpoint     `json:"remoteEndpoints"`
}

// Render implements dataplanes.Factory: the load balancers and remote
// endpoints in HNS's own JSON, for an HNS with every feature (Windows
// Server 2025) and an l2bridge network. Endpoint IDs are only known on
// the node, so they read "local:IP" and "remote:IP".
func (f *Factory) Render(w io.Writer, _ dataplanes.Env, s graph.Snapshot) error {
	if err := f.Options.validate(); err != nil {
		return err
	}
	set := Settings{Features: Features{DSR: true, SessionAffinity: true, IPv6DualStack: true, ModifyLoadBalancer: true},
		EnableDSR: f.Options.EnableDSR, NodeIPs: f.Options.nodeIPs(s.Node)}
	if v, err := netip.ParseAddr(f.Options.SourceVIP); err == nil {
		set.SourceVIP = v
	}
	out := rendered{Note: "assumes Windows Server 2025 (all HNS features) and an l2bridge network; endpoint IDs are symbolic",
		LoadBalancers: []LoadBalancer{}, RemoteEndpoints: []Endpoint{}}
	remote := map[string]bool{}
	net := &Network{Type: "L2Bridge"}
	for _, sp := range s.ServicePorts {
		lbs, problems := LoadBalancersFor(sp, set)
		for _, p := range problems {
			klog.InfoS("HNS cannot program this as asked", "servicePort", sp.Name.String(), "problem", p)
		}
		for _, want := range lbs {
			var ids []string
			for _, e := range want.Endpoints {
				if e.Local {
					ids = append(ids, "local:"+e.IP.String())
					continue
				}
				ids = append(ids, "remote:"+e.IP.String())
				if !remote[e.IP.String()] {
					remote[e.IP.String()] = true
					ep := RemoteEndpoint(net, e.IP, netip.Addr{})
					ep.ID = "remote:" + e.IP.String()
					out.RemoteEndpoints = append(out.RemoteEndpoints, *ep)
				}
			}
			out.LoadBalancers = append(out.LoadBalancers, normalize(want.LoadBalancer(ids)))
		}
	}
	slices.SortStableFunc(out.LoadBalancers, func(a, b LoadBalancer) int { return strings.Compare(lbSortKey(a), lbSortKey(b)) })
	slices.SortFunc(out.RemoteEndpoints, func(a, b Endpoint) int { return strings.Compare(a.ID, b.ID) })
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func lbSortKey(lb LoadBalancer) string {
	vip := ""
	if len(lb.FrontendVIPs) > 0 {
		vip = lb.FrontendVIPs[0]
	}
	pm := lb.PortMappings[0]
	return fmt.Sprintf("%s|%05d|%03d", vip, pm.ExternalPort, pm.Protocol)
}
