package hns

import (
	"context"
	"fmt"
	"github.com/switchyard-proxy/switchyard/internal/instancelock"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"k8s.io/klog/v2"
)

// Driver programs HNS load balancers for one network.
type Driver struct {
	c        Client
	opts     Options
	lock     *instancelock.Lock          // one switchyard per node's HNS
	problems *dataplanes.ProblemReporter // where problems are said, once each

	mu       sync.Mutex
	features Features
	network  *Network
	nodeIPs  []netip.Addr
	local    map[string]string // pod IP -> HNS endpoint ID (the CNI's)
	remote   map[string]string // backend IP -> our remote endpoint ID
	remoteIP map[string]string // the reverse: our remote endpoint ID (idKey) -> IP
	remotePA map[string]string // our remote endpoint ID (idKey) -> its provider address
	// Overlay networks: the ClusterIPs' endpoints (ClusterIP -> ID), how
	// many service ports need each, which to look at next round, and why
	// one could not be made.
	vips       map[string]string
	vipUsers   map[string]int
	spVIPs     map[graph.ServicePortName][]string
	vipTouched map[string]bool
	vipErr     map[string]error
	hostMAC    string
	// maxBackends, once HNS refused a larger load balancer, is how many
	// endpoints one keeps (0: all).
	maxBackends int
	desired     map[string]DesiredLB
	spKeys      map[graph.ServicePortName][]string
	sps         map[graph.ServicePortName]*graph.ServicePort
	inst        map[string]installed // key -> what HNS holds
	refs        map[string]int       // endpoint ID (idKey) -> load balancers using it
	owned       ownedState
	touched     map[string]bool
	// held are the keys whose HNS calls failed, retried with backoff
	// while the rest is programmed; refused, the keys HNS refused as it
	// will again (until they change, or the next full sync).
	held    *dataplanes.Holds
	refused map[string]string
	started bool
	// stale is set when HNS said an object we referenced is gone (a pod's
	// endpoint the CNI removed, a load balancer deleted by hand): the next
	// attempt re-reads HNS first instead of failing the same way.
	stale bool
}

// installed is a load balancer HNS holds: HNS's answer (normalized), and
// the digest of what the driver asked for beyond what HNS is known to
// echo (identity.go).
type installed struct {
	ID    string
	Echo  LoadBalancer
	Asked string
}

// NewDriver returns a driver over an HNS client (the simulator in tests).
func NewDriver(c Client, o Options, env dataplanes.Env) (*Driver, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	d := &Driver{c: c, opts: o, problems: dataplanes.NewProblemReporter(env), local: map[string]string{}, remote: map[string]string{}, remoteIP: map[string]string{}, remotePA: map[string]string{},
		vips: map[string]string{}, vipUsers: map[string]int{}, spVIPs: map[graph.ServicePortName][]string{}, vipTouched: map[string]bool{}, vipErr: map[string]error{},
		desired: map[string]DesiredLB{}, spKeys: map[graph.ServicePortName][]string{},
		sps: map[graph.ServicePortName]*graph.ServicePort{}, inst: map[string]installed{}, refs: map[string]int{},
		touched: map[string]bool{}, held: dataplanes.NewHolds(), refused: map[string]string{}}
	if o.Now != nil {
		d.held.Now = o.Now
	}
	// Before touching anything: one switchyard per node's HNS (two would
	// each delete the other's load balancers as stale). Windows locks the
	// file as Linux does (LockFileEx; released when the process exits).
	lock, err := instancelock.Acquire(o.StateFile+".lock", "this node's HNS load balancers")
	if err != nil {
		return nil, err
	}
	d.lock = lock
	if d.features, err = c.Features(); err != nil {
		lock.Release()
		return nil, fmt.Errorf("HNS features: %w", err)
	}
	if d.features.ModifyLoadBalancer && !d.features.ModifyApplies() {
		klog.InfoS("HNS before 15.5 does not apply ModifyLoadBalancer though it accepts it (kubernetes#131466): replacing load balancers instead",
			"hnsVersion", fmt.Sprintf("%d.%d", d.features.Version.Major, d.features.Version.Minor))
		d.features.ModifyLoadBalancer = false
	}
	if d.network, err = c.Network(o.NetworkName); err != nil {
		lock.Release()
		return nil, fmt.Errorf("HNS network %q (--hns-network-name): %w", o.NetworkName, err)
	}
	if d.network.IsOverlay() && o.SourceVIP == "" {
		lock.Release()
		return nil, fmt.Errorf("network %q is an overlay network: --hns-source-vip is required", o.NetworkName)
	}
	if d.owned, err = loadOwned(o.StateFile); err != nil {
		lock.Release()
		return nil, err
	}
	return d, nil
}

// settings is what the mapping needs now.
func (d *Driver) settings() Settings {
	s := Settings{Features: d.features, EnableDSR: d.opts.EnableDSR, NodeIPs: d.nodeIPs,
		Overlay: d.network.IsOverlay(), RemoteSubnets: d.network.RemoteSubnets}
	if v, err := netip.ParseAddr(d.opts.SourceVIP); err == nil {
		s.SourceVIP = v
	}
	return s
}

// Sync implements dataplanes.Driver: it reads what HNS holds, adopts the
// load balancers and remote endpoints this driver created earlier, and
// brings everything to the snapshot.
func (d *Driver) Sync(ctx context.Context, s graph.Snapshot) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.refresh(); err != nil {
		return err
	}
	d.setNode(s.Node)
	d.perServicePort().Sync(s, maps.Keys(d.sps))
	for k := range d.inst {
		d.touched[k] = true
	}
	d.started = true
	return d.reconcile(true)
}

// Apply implements dataplanes.Driver.
func (d *Driver) Apply(ctx context.Context, delta graph.Delta) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if delta.Node != nil {
		d.setNode(*delta.Node)
	}
	d.perServicePort().Apply(delta)
	return d.reconcile(false)
}

func (d *Driver) perServicePort() dataplanes.PerServicePort {
	return dataplanes.PerServicePort{Set: d.setServicePort, Remove: d.removeServicePort}
}

// refresh reads the network, its endpoints and the load balancers.
func (d *Driver) refresh() error {
	n, err := d.c.Network(d.opts.NetworkName)
	if err != nil {
		return fmt.Errorf("HNS network %q: %w", d.opts.NetworkName, err)
	}
	d.setNetwork(n)
	if err := d.refreshEndpoints(); err != nil {
		return err
	}
	lbs, err := d.c.LoadBalancers()
	if err != nil {
		return fmt.Errorf("listing HNS load balancers: %w", err)
	}
	present := map[string]LoadBalancer{}
	for _, lb := range lbs {
		present[lb.ID] = lb
	}
	d.inst, d.refs = map[string]installed{}, map[string]int{}
	for id, key := range d.owned.LoadBalancers {
		lb, ok := present[id]
		if !ok {
			d.owned.remove(id) // gone from HNS (deleted by hand, or HNS reset)
			continue
		}
		asked, ok := d.owned.Asked[id]
		if !ok {
			asked = askedOf(lb) // recorded before the digest was kept: trust HNS's answer
		}
		d.setInstalled(key, installed{ID: id, Echo: normalize(lb), Asked: asked})
	}
	d.adoptIntended(lbs)
	d.owned.forgetIntents()
	return nil
}

// adoptIntended takes as its own each load balancer no record owns whose
// echo matches an intent exactly: a create whose record a crash (or a lost
// answer) kept from being written. Anything else unowned is left alone.
func (d *Driver) adoptIntended(lbs []LoadBalancer) {
	for _, lb := range lbs {
		if _, ours := d.owned.LoadBalancers[lb.ID]; ours {
			continue
		}
		digest := echoDigest(lb)
		for key, in := range d.owned.Intents {
			if _, installed := d.inst[key]; installed || in.echo != digest {
				continue
			}
			klog.InfoS("Adopting a load balancer this driver created but had not recorded", "key", key, "id", lb.ID)
			d.owned.add(lb.ID, key, in.asked)
			d.setInstalled(key, installed{ID: lb.ID, Echo: normalize(lb), Asked: in.asked})
			break
		}
	}
}

// adoptIntendedKey is adoptIntended for one key, when HNS refuses its
// create because the frontend is in use; it says whether it adopted one.
func (d *Driver) adoptIntendedKey(key string) bool {
	in, ok := d.owned.Intents[key]
	if !ok {
		return false
	}
	lbs, err := d.c.LoadBalancers()
	if err != nil {
		return false
	}
	d.adoptIntended(lbs)
	_, adopted := d.inst[key]
	if !adopted {
		d.owned.Intents[key] = in // still ours to find: the create is retried
	}
	return adopted
}

// refreshEndpoints reads the network's endpoints: the CNI's (local pods)
// and ours (remote backends, by name).
func (d *Driver) refreshEndpoints() error {
	eps, err := d.c.Endpoints(d.network.ID)
	if err != nil {
		return fmt.Errorf("listing HNS endpoints: %w", err)
	}
	n := len(eps)
	d.local, d.remote, d.remoteIP, d.remotePA, d.vips = make(map[string]string, n), make(map[string]string, n), make(map[string]string, n), make(map[string]string, n), map[string]string{}
	for _, ep := range eps {
		ip := ep.IP()
		if ip == "" {
			continue
		}
		switch {
		case strings.HasPrefix(ep.Name, RemotePrefix) && ep.Flags&EndpointFlagRemote != 0:
			d.remote[ip], d.remoteIP[idKey(ep.ID)], d.remotePA[idKey(ep.ID)] = ep.ID, ip, ep.ProviderAddress()
		case strings.HasPrefix(ep.Name, VIPEndpointPrefix) && ep.Flags&EndpointFlagRemote != 0:
			d.vips[ip] = ep.ID
		case ep.Flags&EndpointFlagRemote == 0:
			d.local[ip] = ep.ID
		}
	}
	return nil
}

func (d *Driver) setNode(n graph.Node) {
	ips := d.opts.nodeIPs(n)
	if slices.Equal(ips, d.nodeIPs) {
		return
	}
	d.nodeIPs = ips
	for _, sp := range d.sps {
		d.setServicePort(sp) // source VIPs follow the node IP
	}
}

func (d *Driver) setServicePort(sp *graph.ServicePort) {
	set := d.settings()
	d.setVIPUsers(sp.Name, VIPEndpointsFor(sp, set))
	lbs, problems := LoadBalancersFor(sp, set)
	for _, p := range problems {
		d.report(sp.Name, "HNSCannotProgram", p)
	}
	keys := make([]string, 0, len(lbs))
	for _, lb := range lbs {
		d.desired[lb.Key] = lb
		d.touched[lb.Key] = true
		keys = append(keys, lb.Key)
	}
	for _, k := range d.spKeys[sp.Name] {
		if !slices.Contains(keys, k) {
			delete(d.desired, k)
			d.touched[k] = true
		}
	}
	d.spKeys[sp.Name] = keys
	d.sps[sp.Name] = sp
}

func (d *Driver) removeServicePort(n graph.ServicePortName) {
	for _, k := range d.spKeys[n] {
		delete(d.desired, k)
		d.touched[k] = true
	}
	delete(d.spKeys, n)
	delete(d.sps, n)
	d.setVIPUsers(n, nil)
}

// report says a problem once (a log line, a metric, and an Event on the
// Service when switchyard reads an API server).
func (d *Driver) report(sp graph.ServicePortName, reason, what string) {
	d.problems.Report(dataplanes.Problem{ServicePort: sp, Reason: reason, Message: what})
}
