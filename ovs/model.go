package ovs

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sort"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

// model turns the graph (service ports, the node, its peers), the ports
// on the bridge and the options into desired state: flows and groups
// (state), and the host's side (host). It is pure: the driver adds the
// connections, render adds nothing.
type model struct {
	// cfg is replaced, never changed, when the node or the bridge's ports
	// change: what was rendered with the old one renders again with it.
	cfg     *pipeline.Config
	nodeIPs []netip.Addr // from --ovs-node-ips; empty: the graph's node IPs
	overlay bool
	st      *state
	host    *hostModel
	node    graph.Node
	peers   graph.Peers
	pods    map[uint32]pipeline.Pod
	sps     map[graph.ServicePortName]*graph.ServicePort
	trees   map[graph.ServicePortName]*pipeline.Trees // their long lists' trees, for the next rendering
	clamped map[graph.ServicePortName]bool
	udp     udpFrontends // UDP service ports by frontend IP
}

func newModel(cfg pipeline.Config, overlay bool) *model {
	m := &model{
		cfg:     &cfg,
		nodeIPs: cfg.NodeIPs,
		overlay: overlay,
		st:      newState(),
		host:    newHostModel(),
		peers:   graph.Peers{},
		pods:    map[uint32]pipeline.Pod{},
		sps:     map[graph.ServicePortName]*graph.ServicePort{},
		trees:   map[graph.ServicePortName]*pipeline.Trees{},
		clamped: map[graph.ServicePortName]bool{},
		udp:     udpFrontends{},
	}
	m.host.nodeIPs = slices.Clone(cfg.NodeIPs) // the configured ones (--ovs-node-ips), if any
	m.refreshStatic()
	return m
}

func (m *model) refreshStatic() {
	m.st.setOwner(staticOwner, pipeline.StaticFlows(m.cfg), nil, nil)
}

// setNode takes the node's IPs (unless configured) and pod CIDRs. What
// depends on them is redone: the static flows, every service port (NodePorts,
// frontends on node addresses), pods (hairpin) and peers.
func (m *model) setNode(n graph.Node) {
	m.node = n
	ips := m.nodeIPs
	if len(ips) == 0 {
		ips = n.IPs
	}
	if slices.Equal(ips, m.cfg.NodeIPs) && slices.Equal(n.PodCIDRs, m.cfg.PodCIDRs) {
		return
	}
	cfg := *m.cfg
	cfg.NodeIPs, cfg.PodCIDRs = ips, slices.Clone(n.PodCIDRs)
	m.cfg = &cfg
	m.host.setNodeIPs(ips, m.sps)
	m.refreshAll()
}

// refreshAll redoes everything that depends on the configuration.
func (m *model) refreshAll() {
	m.refreshStatic()
	for _, sp := range m.sps {
		m.setServicePort(sp)
	}
	for _, p := range m.pods {
		m.st.setOwner(podOwner(p.Port), pipeline.PodFlows(m.cfg, p), nil, nil)
	}
	for _, p := range m.peers {
		m.setPeer(p)
	}
}

// setPorts takes the bridge's ports: the gateway, the tunnel and the pods.
func (m *model) setPorts(bp bridgePorts) {
	if bp.gatewayPort != m.cfg.GatewayPort || !equalMAC(bp.gatewayMAC, m.cfg.GatewayMAC) || bp.tunnelPort != m.cfg.TunnelPort {
		cfg := *m.cfg
		cfg.GatewayPort, cfg.GatewayMAC, cfg.TunnelPort = bp.gatewayPort, bp.gatewayMAC, bp.tunnelPort
		m.cfg = &cfg
		m.refreshAll()
	}
	seen := map[uint32]bool{}
	for _, pp := range bp.pods {
		p := pp.Pod
		seen[p.Port] = true
		m.pods[p.Port] = p
		m.st.setOwner(podOwner(p.Port), pipeline.PodFlows(m.cfg, p), nil, nil)
	}
	for port := range m.pods {
		if !seen[port] {
			delete(m.pods, port)
			m.st.removeOwner(podOwner(port))
		}
	}
}

func equalMAC(a, b net.HardwareAddr) bool { return a.String() == b.String() }

// setPeer routes another node's pod CIDRs (through the tunnel in overlay
// mode; the host does it in routed mode).
func (m *model) setPeer(n graph.Node) {
	m.peers[n.Name] = n
	m.st.setOwner(peerOwner(n.Name), pipeline.PeerFlows(m.cfg, m.tunnelPeer(n)), nil, nil)
}

func (m *model) removePeer(name string) {
	delete(m.peers, name)
	m.st.removeOwner(peerOwner(name))
}

// tunnelPeer is a peer as the tunnel sees it: its address of the family
// of this node's first address (the tunnel's own end), else its first.
func (m *model) tunnelPeer(n graph.Node) pipeline.Peer {
	p := pipeline.Peer{Name: n.Name, PodCIDRs: n.PodCIDRs}
	if len(n.IPs) == 0 {
		return p
	}
	p.IP = n.IPs[0]
	if len(m.cfg.NodeIPs) > 0 {
		if ip, ok := graph.FirstOfFamily(n.IPs, graph.FamilyOf(m.cfg.NodeIPs[0])); ok {
			p.IP = ip
		}
	}
	return p
}

// servicePortOfOwner names the service port an owner key is of, if the
// model has it.
func (m *model) servicePortOfOwner(owner ownerKey) (graph.ServicePortName, bool) {
	n, ok := owner.servicePort()
	if !ok || m.sps[n] == nil {
		return graph.ServicePortName{}, false
	}
	return n, true
}

// setServicePort installs or replaces one service port. It returns the
// UDP endpoints it no longer reaches (their conntrack entries are flushed
// after the change is committed).
func (m *model) setServicePort(sp *graph.ServicePort) []graph.Endpoint {
	owner := servicePortOwner(sp.Name)
	old := m.sps[sp.Name]
	cfg := m.cfg
	ids := func(slot string) uint32 { return m.st.alloc.id(owner, slot) }
	trees := m.trees[sp.Name]
	if trees == nil {
		trees = &pipeline.Trees{}
	}
	res := pipeline.ServiceFlows(cfg, sp, ids, trees)
	if trees.Empty() {
		delete(m.trees, sp.Name)
	} else {
		m.trees[sp.Name] = trees
	}
	keep := map[uint32]bool{}
	for _, g := range res.Groups {
		keep[g.ID] = true
	}
	m.st.alloc.keepOnly(owner, keep)
	// The same configuration, service port and group IDs render the same
	// flows (the owner's slots stay until it is set again).
	again := func() rendering {
		r := pipeline.ServiceFlows(cfg, sp, ids, nil)
		return rendering{r.AllFlows(), r.Groups}
	}
	m.st.setOwner(owner, res.AllFlows(), res.Groups, again)
	m.host.replace(old, sp)
	m.setUDPFragments(m.udp.update(sp.Name, old, sp))
	m.sps[sp.Name] = sp
	if res.AffinityClamped {
		m.clamped[sp.Name] = true
	} else {
		delete(m.clamped, sp.Name)
	}
	return removedUDP(old, sp)
}

// removeServicePort drops a service port; it returns its UDP endpoints.
func (m *model) removeServicePort(n graph.ServicePortName) []graph.Endpoint {
	owner := servicePortOwner(n)
	old := m.sps[n]
	m.st.removeOwner(owner)
	m.st.alloc.keepOnly(owner, nil)
	m.host.replace(old, nil)
	m.setUDPFragments(m.udp.update(n, old, nil))
	delete(m.sps, n)
	delete(m.trees, n)
	delete(m.clamped, n)
	return removedUDP(old, nil)
}

// removedUDP lists the UDP endpoints old reached and new does not: of
// those a list lost (found from the parts its versions do not share, so
// a change of a large Service looks at what changed), those no list of
// new holds.
func removedUDP(old, new *graph.ServicePort) []graph.Endpoint {
	if old == nil || old.Name.Protocol != graph.UDP {
		return nil
	}
	var now [3]graph.EndpointList
	if new != nil {
		now = new.EndpointLists()
	}
	var out []graph.Endpoint
	seen := map[netip.AddrPort]bool{}
	for i, l := range old.EndpointLists() {
		gone, _ := now[i].Changes(l)
		for _, e := range gone {
			if ap := e.AddrPort(); !seen[ap] && !holds(now, e) {
				seen[ap] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// holds reports whether one of lists has an endpoint at e's ip:port.
func holds(lists [3]graph.EndpointList, e graph.Endpoint) bool {
	for _, l := range lists {
		if _, ok := l.Find(e.IP, e.Port); ok {
			return true
		}
	}
	return false
}

// servesUDP reports whether a UDP service port reaches e now.
func (m *model) servesUDP(e graph.Endpoint) bool {
	for _, sp := range m.sps {
		if sp.Name.Protocol == graph.UDP && holds(sp.EndpointLists(), e) {
			return true
		}
	}
	return false
}

// sync takes a snapshot: replace everything.
func (m *model) sync(s graph.Snapshot) []graph.Endpoint {
	m.setNode(s.Node)
	want := graph.PeersOf(s.Peers)
	for name := range m.peers {
		if _, ok := want[name]; !ok {
			m.removePeer(name)
		}
	}
	for _, p := range s.Peers {
		if old, ok := m.peers[p.Name]; !ok || !graph.EqualNode(old, p) {
			m.setPeer(p)
		}
	}
	var stale []graph.Endpoint
	m.perServicePort(&stale).Sync(s, maps.Keys(m.sps))
	return stale
}

// perServicePort keeps the model's service ports, gathering the endpoints
// whose UDP conntrack entries went stale; an unchanged one is left as is.
func (m *model) perServicePort(stale *[]graph.Endpoint) dataplanes.PerServicePort {
	return dataplanes.PerServicePort{
		Set: func(sp *graph.ServicePort) {
			if old := m.sps[sp.Name]; old == nil || !graph.Equal(old, sp) {
				*stale = append(*stale, m.setServicePort(sp)...)
			}
		},
		Remove: func(n graph.ServicePortName) { *stale = append(*stale, m.removeServicePort(n)...) },
	}
}

// apply takes a delta.
func (m *model) apply(d graph.Delta) []graph.Endpoint {
	if d.Node != nil {
		m.setNode(*d.Node)
	}
	for _, name := range d.RemovedPeers {
		m.removePeer(name)
	}
	for _, p := range d.Peers {
		m.setPeer(p)
	}
	var stale []graph.Endpoint
	m.perServicePort(&stale).Apply(d)
	return stale
}

// render writes the desired groups and flows as ovs-ofctl text: first the
// groups (`ovs-ofctl -O OpenFlow15 add-groups BR FILE`), then a line
// "# flows", then the flows (`add-flows`).
func (m *model) render(w io.Writer) error {
	var groups []*of.Group
	rendered := map[ownerKey]rendering{}
	for id := range m.st.groups {
		if g := m.st.groupOf(id, rendered); g != nil {
			groups = append(groups, g)
		}
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].ID < groups[j].ID })
	var flows []*of.Flow
	for c := range m.st.flows {
		if f := m.st.flowOf(c, rendered); f != nil {
			flows = append(flows, f)
		}
	}
	sort.Slice(flows, func(i, j int) bool {
		a, b := flows[i], flows[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		return a.Text() < b.Text()
	})
	fmt.Fprintf(w, "# switchyard ovs pipeline: %d groups, %d flows\n", len(groups), len(flows))
	fmt.Fprintln(w, "# groups")
	for _, g := range groups {
		if _, err := fmt.Fprintln(w, g.Text()); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "# flows")
	for _, f := range flows {
		if _, err := fmt.Fprintln(w, f.Text()); err != nil {
			return err
		}
	}
	return nil
}

// servicePortOf is the service port that wants the flow with cookie
// alone (a flow several want is pinned to none).
func (m *model) servicePortOf(cookie uint64) (graph.ServicePortName, bool) {
	if e := m.st.flows[cookie]; e != nil {
		return m.servicePortOfOwner(e.owner)
	}
	return graph.ServicePortName{}, false
}
