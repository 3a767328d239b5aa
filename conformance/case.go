package conformance

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/source"
	"github.com/switchyard-proxy/switchyard/core/source/file"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"sigs.k8s.io/yaml"
)

// Case is one conformance case: steps that change the cluster, each
// followed by probes.
type Case struct {
	Name  string `json:"name"`
	About string `json:"about"`
	Steps []Step `json:"steps"`
	// IgnoresGaps lists capabilities the case's probes would be said to
	// need (Needs reads them from the objects and probes) but do not
	// observe: a driver lacking only these still has every step judged.
	IgnoresGaps []dataplanes.Capability `json:"ignoresGaps,omitempty"`
	// Requires lists capabilities of the driver as a whole the case
	// needs at every step (dataplanes.NodeCapabilities: pod-network),
	// which no object says.
	Requires []dataplanes.Capability `json:"requires,omitempty"`
	File     string                  `json:"-"` // the data file it came from
}

// Step applies and deletes objects, then probes.
type Step struct {
	// Apply holds Services, EndpointSlices (and optionally a Node) to
	// create or replace, as Kubernetes objects.
	Apply []json.RawMessage `json:"apply,omitempty"`
	// Delete names objects to delete: "Service ns/name",
	// "EndpointSlice ns/name".
	Delete []string    `json:"delete,omitempty"`
	Probes []ProbeSpec `json:"probes"`

	objects file.Objects
	deletes []objectRef
}

type objectRef struct{ kind, namespace, name string }

// ProbeSpec is a probe as a case writes it.
type ProbeSpec struct {
	// From is a member of the world (c, p1, external, outside...) or
	// "node" for the node itself.
	From string `json:"from"`
	// To is "ip:port" ("[ip]:port" for IPv6), or "node:port" /
	// "node6:port" for the node's IPv4 / IPv6 address.
	To       string `json:"to"`
	Protocol string `json:"protocol,omitempty"` // TCP (default), UDP or SCTP
	// Count is how many connections to make (default 10).
	Count int `json:"count,omitempty"`
	// Interval is a pause between connections ("2s"), for timeouts.
	Interval string `json:"interval,omitempty"`
	Expect   Expect `json:"expect"`

	dst      netip.AddrPort
	interval time.Duration
}

// Expect is a probe's expected outcome: either Reaches (with optional
// All, Sticky, Distinct) or Outcome.
type Expect struct {
	// Reaches lists who may answer: "p1" (any port) or "p1:8081".
	Reaches []string `json:"reaches,omitempty"`
	// All: every entry of Reaches answers at least once.
	All bool `json:"all,omitempty"`
	// Sticky: every connection reaches the same endpoint.
	Sticky bool `json:"sticky,omitempty"`
	// Distinct: at least this many different endpoints answer.
	Distinct int `json:"distinct,omitempty"`
	// Source: every answering backend saw the connection come from this
	// member's address (of the destination's family), or "node" for the
	// node's address: "c" means unchanged, "node" masqueraded.
	Source string `json:"source,omitempty"`
	// Outcome is "rejected" (TCP reset / ICMP unreachable, promptly),
	// "dropped" (no answer at all) or "unreached" (no endpoint answers,
	// however it fails).
	Outcome string `json:"outcome,omitempty"`
}

// The outcomes a case may expect.
const (
	ExpectRejected  = "rejected"
	ExpectDropped   = "dropped"
	ExpectUnreached = "unreached"
)

type caseFile struct {
	Cases []Case `json:"cases"`
}

// LoadCases reads every file matching glob in fsys ("cases/*.yaml"),
// each holding `cases:`, and checks them.
func LoadCases(fsys fs.FS, glob string) ([]Case, error) {
	names, err := fs.Glob(fsys, glob)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no case files match %s", glob)
	}
	var all []Case
	seen := map[string]string{}
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		var cf caseFile
		if err := yaml.UnmarshalStrict(data, &cf); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for i := range cf.Cases {
			c := &cf.Cases[i]
			c.File = path.Base(name)
			if err := c.check(); err != nil {
				return nil, fmt.Errorf("%s: case %q: %w", name, c.Name, err)
			}
			if f, dup := seen[c.Name]; dup {
				return nil, fmt.Errorf("%s: case %q is also in %s", name, c.Name, f)
			}
			seen[c.Name] = c.File
			all = append(all, *c)
		}
	}
	return all, nil
}

func (c *Case) check() error {
	if c.Name == "" || strings.ContainsAny(c.Name, " /") {
		return fmt.Errorf("a case needs a name without spaces or slashes")
	}
	if c.About == "" {
		return fmt.Errorf("say what the case is about (about:)")
	}
	if len(c.Steps) == 0 {
		return fmt.Errorf("no steps")
	}
	for _, g := range c.IgnoresGaps {
		if !slices.Contains(dataplanes.All, g) {
			return fmt.Errorf("ignoresGaps: %q is not a capability (%v)", g, dataplanes.All)
		}
	}
	for _, r := range c.Requires {
		if !slices.Contains(dataplanes.NodeCapabilities, r) {
			return fmt.Errorf("requires: %q is not a driver capability (%v)", r, dataplanes.NodeCapabilities)
		}
	}
	for i := range c.Steps {
		if err := c.Steps[i].check(c.Name, i); err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return c.coreAccepts()
}

// rejections collects what the core refuses.
type rejections struct {
	source.NopObserver
	list []build.Rejection
}

func (r *rejections) Rejected(x build.Rejection) { r.list = append(r.list, x) }
func (r *rejections) ObjectChanged(string)       {}

// coreAccepts runs the steps through the core: a case whose objects the
// core refuses (a typo, an invalid field) would silently test something
// else, so it is an error in the case.
func (c *Case) coreAccepts() error {
	rej := &rejections{}
	tr := tracker.New(tracker.Options{NodeName: World.NodeName, Observer: rej,
		Build: build.Options{NodePortRange: build.DefaultNodePortRange}})
	for i, s := range c.Steps {
		s.feed(tr)
		tr.Commit(tr.Next(true))
		if len(rej.list) > 0 {
			return fmt.Errorf("step %d: the core refuses an object: %s", i+1, rej.list[0])
		}
	}
	return nil
}

func (s *Step) check(caseName string, index int) error {
	for j, raw := range s.Apply {
		l := file.Parse(fmt.Sprintf("%s step %d object %d", caseName, index+1, j+1), raw)
		if len(l.Errors) > 0 {
			return l.Errors[0]
		}
		if n := len(l.Services) + len(l.Slices) + len(l.Nodes); n != 1 {
			return fmt.Errorf("object %d is not a Service, EndpointSlice or Node", j+1)
		}
		s.objects.Services = append(s.objects.Services, l.Services...)
		s.objects.Slices = append(s.objects.Slices, l.Slices...)
		s.objects.Nodes = append(s.objects.Nodes, l.Nodes...)
	}
	for _, d := range s.Delete {
		kind, key, _ := strings.Cut(d, " ")
		ns, name, ok := strings.Cut(key, "/")
		if !ok || (kind != "Service" && kind != "EndpointSlice") {
			return fmt.Errorf("delete %q: want \"Service ns/name\" or \"EndpointSlice ns/name\"", d)
		}
		s.deletes = append(s.deletes, objectRef{kind, ns, name})
	}
	if len(s.Probes) == 0 {
		return fmt.Errorf("no probes")
	}
	for j := range s.Probes {
		if err := s.Probes[j].check(); err != nil {
			return fmt.Errorf("probe %d: %w", j+1, err)
		}
	}
	return nil
}

func (p *ProbeSpec) check() error {
	dst, err := parseDestination(p.To)
	if err != nil {
		return err
	}
	p.dst = dst
	if p.Protocol == "" {
		p.Protocol = string(graph.TCP)
	}
	switch graph.Protocol(p.Protocol) {
	case graph.TCP, graph.UDP, graph.SCTP:
	default:
		return fmt.Errorf("protocol %q: want TCP, UDP or SCTP", p.Protocol)
	}
	if p.Count == 0 {
		p.Count = 10
	}
	if p.Count < 0 || p.Count > 200 {
		return fmt.Errorf("count %d: want 1..200", p.Count)
	}
	if err := p.checkChance(); err != nil {
		return err
	}
	if p.Interval != "" {
		if p.interval, err = time.ParseDuration(p.Interval); err != nil || p.interval <= 0 {
			return fmt.Errorf("interval %q: want a positive duration", p.Interval)
		}
	}
	if p.From != "node" {
		m, ok := World.Member(p.From)
		if !ok || m.Kind == NodeHost {
			return fmt.Errorf("from %q: not a client of the world (a pod, an external client, or \"node\")", p.From)
		}
		if _, ok := m.IP(dst.Addr()); !ok {
			return fmt.Errorf("from %q: it has no address of %s's family", p.From, dst.Addr())
		}
	}
	return p.Expect.check(dst.Addr())
}

func (e Expect) check(dst netip.Addr) error {
	if (len(e.Reaches) == 0) == (e.Outcome == "") {
		return fmt.Errorf("expect either reaches or outcome")
	}
	switch e.Outcome {
	case "", ExpectRejected, ExpectDropped, ExpectUnreached:
	default:
		return fmt.Errorf("outcome %q: want rejected, dropped or unreached", e.Outcome)
	}
	if e.Outcome != "" && (e.All || e.Sticky || e.Distinct > 0) {
		return fmt.Errorf("all, sticky and distinct go with reaches")
	}
	if e.Source != "" {
		if e.Outcome != "" {
			return fmt.Errorf("source goes with reaches")
		}
		if _, ok := e.sourceAddr(dst); !ok {
			return fmt.Errorf("source %q: not a member with an address of %s's family (or \"node\")", e.Source, dst)
		}
	}
	for _, r := range e.Reaches {
		name, port, hasPort := strings.Cut(r, ":")
		if m, ok := World.Member(name); !ok || !m.Serving() {
			return fmt.Errorf("reaches %q: not a member of the world that serves", r)
		}
		if hasPort {
			if _, err := strconv.ParseUint(port, 10, 16); err != nil {
				return fmt.Errorf("reaches %q: bad port", r)
			}
		}
	}
	return nil
}

// sourceAddr is the address Source names for a destination's family.
func (e Expect) sourceAddr(dst netip.Addr) (netip.Addr, bool) {
	if e.Source == "node" {
		return World.NodeIP(dst.Is6()), true
	}
	m, ok := World.Member(e.Source)
	if !ok {
		return netip.Addr{}, false
	}
	return m.IP(dst)
}

// parseDestination reads "ip:port", "[ip6]:port", "node:port" or
// "node6:port".
func parseDestination(s string) (netip.AddrPort, error) {
	host, port, ok := strings.Cut(s, ":")
	if ok && (host == "node" || host == "node6") {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return netip.AddrPort{}, fmt.Errorf("to %q: bad port", s)
		}
		return netip.AddrPortFrom(World.NodeIP(host == "node6"), uint16(n)), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("to %q: want ip:port, [ip6]:port, node:port or node6:port", s)
	}
	return ap, nil
}

// Frontends lists every ClusterIP, external IP and load-balancer IP the
// case's objects use (cases must not share them: a world is reused from
// case to case, and affinity or conntrack state keyed by a frontend could
// leak from one case into the next).
func (c *Case) Frontends() []string {
	var out []string
	for _, s := range c.Steps {
		for _, svc := range s.objects.Services {
			out = append(out, svc.Spec.ClusterIPs...)
			out = append(out, svc.Spec.ExternalIPs...)
			for _, in := range svc.Status.LoadBalancer.Ingress {
				out = append(out, in.IP)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(slices.DeleteFunc(out, func(s string) bool { return s == "" || s == "None" }))
}
