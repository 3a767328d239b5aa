package engine

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

// Model turns the graph (service ports, the node, its peers), the ports
// on the bridge and the options into desired state: flows and groups
// (state), and the host's side (host). It is pure: the driver adds the
// connections, render adds nothing.
type Model struct {
	// cfg is replaced, never changed, when the node or the bridge's ports
	// change: what was rendered with the old one renders again with it.
	cfg     *pipeline.Config
	nodeIPs []netip.Addr // from --ovs-node-ips; empty: the graph's node IPs
	overlay bool
	st      *State
	host    *HostModel
	node    graph.Node
	peers   graph.Peers
	peerIPs map[netip.Addr]int // the peers' addresses, counted (RoutesFrontend)
	pods    map[uint32]pipeline.Pod
	sps     map[graph.ServicePortName]*graph.ServicePort
	trees   map[graph.ServicePortName]*pipeline.Trees // their long lists' trees, for the next Rendering
	clamped map[graph.ServicePortName]bool
	udp     udpFrontends // UDP service ports by frontend IP
}

func NewModel(cfg pipeline.Config, overlay bool) *Model {
	m := &Model{
		cfg:     &cfg,
		nodeIPs: cfg.NodeIPs,
		overlay: overlay,
		st:      NewState(),
		host:    NewHostModel(),
		peers:   graph.Peers{},
		peerIPs: map[netip.Addr]int{},
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

func (m *Model) refreshStatic() {
	m.st.setOwner(StaticOwner, pipeline.StaticFlows(m.cfg), nil, nil)
}

// SetNode takes the node's IPs (unless configured) and pod CIDRs. What
// depends on them is redone: the static flows, every service port (NodePorts,
// frontends on node addresses), pods (hairpin) and peers.
func (m *Model) SetNode(n graph.Node) {
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
	m.host.SetNodeIPs(ips, m.sps)
	m.RefreshAll()
}

// RefreshAll redoes everything that depends on the configuration.
func (m *Model) RefreshAll() {
	m.refreshStatic()
	for _, sp := range m.sps {
		m.setServicePort(sp)
	}
	for _, p := range m.pods {
		m.st.setOwner(PodOwner(p.Port), pipeline.PodFlows(m.cfg, p), nil, nil)
	}
	for _, p := range m.peers {
		m.setPeer(p)
	}
}

// SetCommitNullSNAT sets pipeline.Config.CommitNullSNAT, which only
// the static flows read.
func (m *Model) SetCommitNullSNAT(on bool) {
	if on == m.cfg.CommitNullSNAT {
		return
	}
	cfg := *m.cfg
	cfg.CommitNullSNAT = on
	m.cfg = &cfg
	m.refreshStatic()
}

// SetPorts takes the bridge's ports: the gateway, the tunnel and the pods.
func (m *Model) SetPorts(bp Ports) {
	if bp.GatewayPort != m.cfg.GatewayPort || !equalMAC(bp.GatewayMAC, m.cfg.GatewayMAC) || bp.TunnelPort != m.cfg.TunnelPort {
		cfg := *m.cfg
		cfg.GatewayPort, cfg.GatewayMAC, cfg.TunnelPort = bp.GatewayPort, bp.GatewayMAC, bp.TunnelPort
		m.cfg = &cfg
		m.RefreshAll()
	}
	seen := map[uint32]bool{}
	for _, pp := range bp.Pods {
		p := pp.Pod
		seen[p.Port] = true
		m.pods[p.Port] = p
		m.st.setOwner(PodOwner(p.Port), pipeline.PodFlows(m.cfg, p), nil, nil)
	}
	for port := range m.pods {
		if !seen[port] {
			delete(m.pods, port)
			m.st.removeOwner(PodOwner(port))
		}
	}
}

func equalMAC(a, b net.HardwareAddr) bool { return a.String() == b.String() }

// setPeer routes another node's pod CIDRs (through the tunnel in overlay
// mode; the host does it in routed mode).
func (m *Model) setPeer(n graph.Node) {
	m.countPeerIPs(m.peers[n.Name], -1)
	m.peers[n.Name] = n
	m.countPeerIPs(n, 1)
	m.st.setOwner(PeerOwner(n.Name), pipeline.PeerFlows(m.cfg, m.tunnelPeer(n)), nil, nil)
}

func (m *Model) removePeer(name string) {
	m.countPeerIPs(m.peers[name], -1)
	delete(m.peers, name)
	m.st.removeOwner(PeerOwner(name))
}

// countPeerIPs adds by to the count of each of n's addresses (a zero
// Node has none).
func (m *Model) countPeerIPs(n graph.Node, by int) {
	for _, ip := range n.IPs {
		if m.peerIPs[ip] += by; m.peerIPs[ip] <= 0 {
			delete(m.peerIPs, ip)
		}
	}
}

// tunnelPeer is a peer as the tunnel sees it: its address of the family
// of this node's first address (the tunnel's own end), else its first.
func (m *Model) tunnelPeer(n graph.Node) pipeline.Peer {
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

// ServicePortOfOwner names the service port an owner key is of, if the
// model has it.
func (m *Model) ServicePortOfOwner(owner OwnerKey) (graph.ServicePortName, bool) {
	n, ok := owner.servicePort()
	if !ok || m.sps[n] == nil {
		return graph.ServicePortName{}, false
	}
	return n, true
}

// setServicePort installs or replaces one service port. It returns the
// UDP endpoints it no longer reaches (their conntrack entries are flushed
// after the change is committed).
func (m *Model) setServicePort(sp *graph.ServicePort) []graph.Endpoint {
	owner := ServicePortOwner(sp.Name)
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
	again := func() Rendering {
		r := pipeline.ServiceFlows(cfg, sp, ids, nil)
		return Rendering{r.AllFlows(), r.Groups}
	}
	m.st.setOwner(owner, res.AllFlows(), res.Groups, again)
	m.host.Replace(old, sp)
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
func (m *Model) removeServicePort(n graph.ServicePortName) []graph.Endpoint {
	owner := ServicePortOwner(n)
	old := m.sps[n]
	m.st.removeOwner(owner)
	m.st.alloc.keepOnly(owner, nil)
	m.host.Replace(old, nil)
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

// ServesUDP reports whether a UDP service port reaches e now.
func (m *Model) ServesUDP(e graph.Endpoint) bool {
	for _, sp := range m.sps {
		if sp.Name.Protocol == graph.UDP && holds(sp.EndpointLists(), e) {
			return true
		}
	}
	return false
}

// Sync takes a snapshot: replace everything.
func (m *Model) Sync(s graph.Snapshot) []graph.Endpoint {
	m.SetNode(s.Node)
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
func (m *Model) perServicePort(stale *[]graph.Endpoint) dataplanes.PerServicePort {
	return dataplanes.PerServicePort{
		Set: func(sp *graph.ServicePort) {
			if old := m.sps[sp.Name]; old == nil || !graph.Equal(old, sp) {
				*stale = append(*stale, m.setServicePort(sp)...)
			}
		},
		Remove: func(n graph.ServicePortName) { *stale = append(*stale, m.removeServicePort(n)...) },
	}
}

// Apply takes a delta.
func (m *Model) Apply(d graph.Delta) []graph.Endpoint {
	if d.Node != nil {
		m.SetNode(*d.Node)
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

// Render writes the desired groups and flows as ovs-ofctl text: first the
// groups (`ovs-ofctl -O OpenFlow15 add-groups BR FILE`), then a line
// "# flows", then the flows (`add-flows`).
func (m *Model) Render(w io.Writer) error {
	var groups []*of.Group
	rendered := map[OwnerKey]Rendering{}
	for id := range m.st.groups {
		if g := m.st.GroupOf(id, rendered); g != nil {
			groups = append(groups, g)
		}
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].ID < groups[j].ID })
	var flows []*of.Flow
	for c := range m.st.flows {
		if f := m.st.FlowOf(c, rendered); f != nil {
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

// ServicePortOf is the service port that wants the flow with cookie
// alone (a flow several want is pinned to none).
func (m *Model) ServicePortOf(cookie uint64) (graph.ServicePortName, bool) {
	if e := m.st.flows[cookie]; e != nil {
		return m.ServicePortOfOwner(e.owner)
	}
	return graph.ServicePortName{}, false
}

// State is the desired-versus-installed state the model keeps.
func (m *Model) State() *State { return m.st }

// Config is the pipeline's configuration (read-only).
func (m *Model) Config() *pipeline.Config { return m.cfg }

// Host is the model's host side: the frontends, captures and NodePorts the
// host routes into the bridge.
func (m *Model) Host() *HostModel { return m.host }

// Node is this node, as the graph last gave it.
func (m *Model) Node() graph.Node { return m.node }

// Clamped lists the service ports whose affinity timeout was cut to what
// OVS holds, with the timeout each asked for.
func (m *Model) Clamped() map[graph.ServicePortName]int32 {
	out := make(map[graph.ServicePortName]int32, len(m.clamped))
	for n := range m.clamped {
		out[n] = m.sps[n].SessionAffinity.TimeoutSeconds
	}
	return out
}
