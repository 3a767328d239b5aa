package hns

import (
	"net/netip"
	"time"

	"github.com/switchyard-proxy/switchyard/dataplanes"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/core/graph"
)

// Options are the --hns-* flags.
type Options struct {
	NetworkName string
	EnableDSR   bool
	SourceVIP   string
	NodeIPs     []string
	StateFile   string
	// Now is the clock the retries of held load balancers follow (nil:
	// time.Now; tests set another). Not a flag.
	Now func() time.Time
}

// AddFlags adds the HNS driver's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.NetworkName, "hns-network-name", "cbr0", "hns: the HNS network pods are on (l2bridge or overlay)")
	fs.BoolVar(&o.EnableDSR, "hns-enable-dsr", false, "hns: direct server return for ClusterIP load balancers (externalTrafficPolicy=Local ones use DSR whenever HNS supports it)")
	fs.StringVar(&o.SourceVIP, "hns-source-vip", "", "hns: source VIP of load balancers on an overlay network (required there); l2bridge uses the node IP")
	fs.StringSliceVar(&o.NodeIPs, "hns-node-ips", nil, "hns: the node's addresses (default: the Node's primary IPs)")
	fs.StringVar(&o.StateFile, "hns-state-file", `C:\ProgramData\switchyard\hns-owned.json`, "hns: where the driver records the load balancers it created (HNS load balancers carry no owner)")
}

// nodeIPs are the addresses load balancers use as the node's: the
// --hns-node-ips flag when set (validated by the factory), else the
// Node's primary IPs.
func (o *Options) nodeIPs(n graph.Node) []netip.Addr {
	configured, _ := dataplanes.ParseIPFlag("hns-node-ips", o.NodeIPs)
	return dataplanes.NodeIPs(configured, n)
}
