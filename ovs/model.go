package ovs

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"sort"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

// model turns the graph, the node and the pods into desired state. It is
// pure: the driver adds the connection, render adds nothing.
type model struct {
	cfg       pipeline.Config
	nodeIPs   []netip.Addr // from --ovs-node-ips; empty: the graph's node IPs
	st        *state
	pods      map[uint32]pipeline.Pod
	sps       map[graph.ServicePortName]*graph.ServicePort
	clamped   map[graph.ServicePortName]bool
	uplinkSet bool
}

func newModel(cfg pipeline.Config) *model {
	m := &model{
		cfg:     cfg,
		nodeIPs: cfg.NodeIPs,
		st:      newState(),
		pods:    map[uint32]pipeline.Pod{},
		sps:     map[graph.ServicePortName]*graph.ServicePort{},
		clamped: map[graph.ServicePortName]bool{},
	}
	m.refreshStatic()
	return m
}

func (m *model) refreshStatic() {
	m.st.setOwner("static", pipeline.StaticFlows(&m.cfg), nil)
	m.st.setOwner("uplink", pipeline.UplinkFlows(&m.cfg), nil)
}

// setNode takes the node's IPs (unless configured) for NodePorts and
// masquerade; every service port with a NodePort is redone.
func (m *model) setNode(n graph.Node) {
	ips := m.nodeIPs
	if len(ips) == 0 {
		ips = n.IPs
	}
	if slices.Equal(ips, m.cfg.NodeIPs) {
		return
	}
	m.cfg.NodeIPs = ips
	m.refreshStatic()
	for _, sp := range m.sps {
		if sp.NodePort != 0 {
			m.setServicePort(sp)
		}
	}
}

func spOwner(n graph.ServicePortName) string { return "sp/" + n.String() }

// setServicePort installs or replaces one service port. It returns the
// UDP endpoints it no longer reaches (their conntrack entries are flushed
// after the change is committed).
func (m *model) setServicePort(sp *graph.ServicePort) []graph.Endpoint {
	owner := spOwner(sp.Name)
	old := m.sps[sp.Name]
	res := pipeline.ServiceFlows(&m.cfg, sp, func(slot string, _ [][]of.Action) uint32 {
		return m.st.alloc.id(owner, slot)
	})
	keep := map[uint32]bool{}
	for _, g := range res.Groups {
		keep[g.ID] = true
	}
	m.st.alloc.keepOnly(owner, keep)
	m.st.setOwner(owner, append(append([]*of.Flow{}, res.Flows...), res.Endpoints...), res.Groups)
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
	owner := spOwner(n)
	old := m.sps[n]
	m.st.removeOwner(owner)
	m.st.alloc.keepOnly(owner, nil)
	delete(m.sps, n)
	delete(m.clamped, n)
	return removedUDP(old, nil)
}

// removedUDP lists the UDP endpoints old reached and new does not.
func removedUDP(old, new *graph.ServicePort) []graph.Endpoint {
	if old == nil || old.Name.Protocol != graph.UDP {
		return nil
	}
	keep := map[netip.AddrPort]bool{}
	if new != nil {
		for _, l := range [][]graph.Endpoint{new.InternalEndpoints, new.ExternalEndpoints, new.ShortCircuitEndpoints} {
			for _, e := range l {
				keep[e.AddrPort()] = true
			}
		}
	}
	var out []graph.Endpoint
	seen := map[netip.AddrPort]bool{}
	for _, l := range [][]graph.Endpoint{old.InternalEndpoints, old.ExternalEndpoints, old.ShortCircuitEndpoints} {
		for _, e := range l {
			if ap := e.AddrPort(); !keep[ap] && !seen[ap] {
				seen[ap] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// setPods replaces the pods on the bridge.
func (m *model) setPods(pods []pipeline.Pod) {
	seen := map[uint32]bool{}
	for _, p := range pods {
		seen[p.Port] = true
		m.pods[p.Port] = p
		m.st.setOwner(fmt.Sprintf("pod/%d", p.Port), pipeline.PodFlows(&m.cfg, p), nil)
	}
	for port := range m.pods {
		if !seen[port] {
			delete(m.pods, port)
			m.st.removeOwner(fmt.Sprintf("pod/%d", port))
		}
	}
}

// setUplink sets the uplink's OpenFlow port (0: none).
func (m *model) setUplink(port uint32) {
	if m.cfg.UplinkPort == port && m.uplinkSet {
		return
	}
	m.cfg.UplinkPort, m.uplinkSet = port, true
	m.refreshStatic()
}

// apply takes a snapshot (replace everything) or a delta.
func (m *model) sync(s graph.Snapshot) []graph.Endpoint {
	m.setNode(s.Node)
	var stale []graph.Endpoint
	want := map[graph.ServicePortName]bool{}
	for _, sp := range s.ServicePorts {
		want[sp.Name] = true
		if old := m.sps[sp.Name]; old == nil || !graph.Equal(old, sp) {
			stale = append(stale, m.setServicePort(sp)...)
		}
	}
	for n := range m.sps {
		if !want[n] {
			stale = append(stale, m.removeServicePort(n)...)
		}
	}
	return stale
}

func (m *model) apply(d graph.Delta) []graph.Endpoint {
	if d.Node != nil {
		m.setNode(*d.Node)
	}
	var stale []graph.Endpoint
	for _, sp := range d.Removed {
		stale = append(stale, m.removeServicePort(sp.Name)...)
	}
	for _, u := range d.Updated {
		stale = append(stale, m.setServicePort(u.New)...)
	}
	for _, sp := range d.Added {
		stale = append(stale, m.setServicePort(sp)...)
	}
	return stale
}

// render writes the desired groups and flows as ovs-ofctl text: first the
// groups (`ovs-ofctl -O OpenFlow15 add-groups BR FILE`), then a line
// "# flows", then the flows (`add-flows`).
func (m *model) render(w io.Writer) error {
	var groups []*of.Group
	for _, e := range m.st.groups {
		groups = append(groups, e.group)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].ID < groups[j].ID })
	var flows []*of.Flow
	for _, e := range m.st.flows {
		flows = append(flows, e.flow)
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
