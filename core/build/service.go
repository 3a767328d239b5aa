package build

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	v1 "k8s.io/api/core/v1"
)

// DefaultAffinityTimeout is the API default for ClientIP affinity (3 hours).
const DefaultAffinityTimeout = 10800

// maxAffinityTimeout is the API server's upper bound (one day).
const maxAffinityTimeout = 86400

// serviceInfo is what the builder keeps of a Service: everything but the
// endpoints, already validated.
type serviceInfo struct {
	namespace, name string
	families        graph.FamilySet
	clusterIPs      []netip.Addr
	externalIPs     []netip.Addr
	lbIPs           []netip.Addr
	sourceRanges    []netip.Prefix
	affinity        graph.SessionAffinity
	itpLocal        bool
	etpLocal        bool // ExternalPolicyLocal: externally accessible type and ETP=Local
	healthCheckPort uint16
	annotations     map[string]string
	ports           []portInfo
	protected       []netip.Addr // Options.ProtectedIPs
}

// portInfo is one validated entry of spec.ports.
type portInfo struct {
	name     string
	protocol graph.Protocol
	port     uint16
	nodePort uint16
}

// SkipReason says why a whole Service is not proxied, or "" if it is.
// Skipping is not a rejection: these Services are valid, just not ours.
func SkipReason(svc *object.Service, opts Options) string {
	switch {
	case svc.Type == v1.ServiceTypeExternalName:
		return "ExternalName service"
	case svc.ClusterIP == v1.ClusterIPNone:
		return "headless service (clusterIP: None)"
	case svc.ClusterIP == "" && len(svc.ClusterIPs) == 0:
		return "service has no ClusterIP"
	}
	return skipLabels(svc.ProxyName, svc.HasProxyName, svc.Headless, opts)
}

// skipLabels applies kube-proxy's label selector to an object's labels.
func skipLabels(proxyName string, hasProxyName, headless bool, opts Options) string {
	if hasProxyName && (opts.ProxyName == "" || proxyName != opts.ProxyName) {
		return fmt.Sprintf("label %s=%q names another proxy", object.LabelServiceProxyName, proxyName)
	}
	if headless {
		return fmt.Sprintf("label %s is set", object.LabelHeadless)
	}
	return ""
}

// parseService validates a Service. It returns nil when the Service cannot
// be proxied at all (the reason is in rej).
func parseService(svc *object.Service, opts Options, rej *rejections) *serviceInfo {
	if svc.Namespace == "" || svc.Name == "" {
		rej.add("metadata", ReasonMissingName, "service has no namespace or name")
		return nil
	}
	si := &serviceInfo{namespace: svc.Namespace, name: svc.Name, protected: opts.ProtectedIPs}
	si.parseClusterIPs(svc, rej)
	if si.families == 0 {
		rej.add("spec.clusterIPs", ReasonNoClusterIP, "no valid ClusterIP: the service is not proxied")
		return nil
	}
	si.externalIPs = si.parseIPList(svc.ExternalIPs, "spec.externalIPs", rej)
	si.parseIngress(svc, rej)
	si.parseSourceRanges(svc, rej)
	si.parseAffinity(svc, rej)
	si.parsePolicies(svc, rej)
	si.parsePorts(svc, opts, rej)
	for _, k := range opts.Annotations {
		if v, ok := svc.Annotations[k]; ok {
			if si.annotations == nil {
				si.annotations = map[string]string{}
			}
			si.annotations[k] = v
		}
	}
	return si
}

// parseClusterIPs keeps the first valid ClusterIP of each family, as
// upstream's GetClusterIPByFamily does.
func (si *serviceInfo) parseClusterIPs(svc *object.Service, rej *rejections) {
	ips, field := svc.ClusterIPs, "spec.clusterIPs"
	if len(ips) == 0 {
		ips, field = []string{svc.ClusterIP}, "spec.clusterIP"
	}
	for i, s := range ips {
		f := fmt.Sprintf("%s[%d]", field, i)
		ip, err := parseIP(s)
		if err != nil {
			rej.add(f, ReasonInvalidIP, "%v", err)
			continue
		}
		fam := graph.FamilyOf(ip)
		if si.families.Has(fam) {
			rej.add(f, ReasonDuplicateFamily, "second %s ClusterIP %s ignored", fam, ip)
			continue
		}
		si.families = si.families.With(fam)
		si.clusterIPs = append(si.clusterIPs, ip)
	}
}

// parseIPList parses IPs, keeping those of the service's families.
func (si *serviceInfo) parseIPList(list []string, field string, rej *rejections) []netip.Addr {
	var out []netip.Addr
	for i, s := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		ip, err := parseIP(s)
		if err != nil {
			rej.add(f, ReasonInvalidIP, "%v", err)
			continue
		}
		if !si.families.Has(graph.FamilyOf(ip)) {
			rej.add(f, ReasonIPFamilyMismatch, "%s is not of the service's IP families", ip)
			continue
		}
		if slices.Contains(si.protected, ip) {
			rej.add(f, ReasonProtectedIP, "%s is the API server's address: never captured (the node would lose the API server)", ip)
			continue
		}
		out = appendUnique(out, ip)
	}
	return out
}

// parseIngress keeps VIP-mode load-balancer ingress IPs (ipMode Proxy means
// the load balancer proxies, so traffic arrives addressed to the node).
func (si *serviceInfo) parseIngress(svc *object.Service, rej *rejections) {
	var vips []string
	for _, ing := range svc.Ingress {
		if ing.IPMode != "" && ing.IPMode != v1.LoadBalancerIPModeVIP {
			continue
		}
		vips = append(vips, ing.IP)
	}
	si.lbIPs = si.parseIPList(vips, "status.loadBalancer.ingress.ip", rej)
}

func (si *serviceInfo) parseSourceRanges(svc *object.Service, rej *rejections) {
	for i, s := range svc.LoadBalancerSourceRanges {
		f := fmt.Sprintf("spec.loadBalancerSourceRanges[%d]", i)
		p, err := parseCIDR(s)
		if err != nil {
			rej.add(f, ReasonInvalidCIDR, "%v", err)
			continue
		}
		if !si.families.Has(graph.FamilyOf(p.Addr())) {
			continue // a range of a family the service does not serve filters nothing
		}
		if !containsPrefix(si.sourceRanges, p) {
			si.sourceRanges = append(si.sourceRanges, p)
		}
	}
}

func (si *serviceInfo) parseAffinity(svc *object.Service, rej *rejections) {
	switch svc.SessionAffinity {
	case "", v1.ServiceAffinityNone:
		return
	case v1.ServiceAffinityClientIP:
	default:
		rej.add("spec.sessionAffinity", ReasonInvalidAffinity, "unknown session affinity %q: treated as None", svc.SessionAffinity)
		return
	}
	timeout := int32(DefaultAffinityTimeout)
	if svc.AffinityTimeout != nil {
		if t := *svc.AffinityTimeout; t >= 1 && t <= maxAffinityTimeout {
			timeout = t
		} else {
			rej.add("spec.sessionAffinityConfig.clientIP.timeoutSeconds", ReasonInvalidAffinity,
				"timeout %d outside 1..%d: using the default %d", t, maxAffinityTimeout, DefaultAffinityTimeout)
		}
	}
	si.affinity = graph.SessionAffinity{ClientIP: true, TimeoutSeconds: timeout}
}

// parsePolicies follows upstream's apiservice.ExternalPolicyLocal,
// InternalPolicyLocal and NeedsHealthCheck.
func (si *serviceInfo) parsePolicies(svc *object.Service, rej *rejections) {
	si.itpLocal = svc.InternalTrafficPolicy == v1.ServiceInternalTrafficPolicyLocal
	externallyAccessible := svc.Type == v1.ServiceTypeLoadBalancer || svc.Type == v1.ServiceTypeNodePort ||
		(svc.Type == v1.ServiceTypeClusterIP && len(svc.ExternalIPs) > 0)
	si.etpLocal = externallyAccessible && svc.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal
	if svc.Type == v1.ServiceTypeLoadBalancer && si.etpLocal {
		p := svc.HealthCheckNodePort
		switch {
		case p == 0:
			// Upstream logs and runs without a health check port.
		case p < 1 || p > 65535:
			rej.add("spec.healthCheckNodePort", ReasonInvalidPort, "port %d is outside 1..65535", p)
		default:
			si.healthCheckPort = uint16(p)
		}
	}
}

func (si *serviceInfo) parsePorts(svc *object.Service, opts Options, rej *rejections) {
	type numKey struct {
		port     uint16
		protocol graph.Protocol
	}
	seenName := map[string]bool{}
	seenNum := map[numKey]bool{}
	for i := range svc.Ports {
		p := &svc.Ports[i]
		f := "spec.ports[" + strconv.Itoa(i) + "]"
		proto, ok := parseProtocol(p.Protocol)
		if !ok {
			rej.add(f+".protocol", ReasonUnknownProtocol, "protocol %q is not TCP, UDP or SCTP", p.Protocol)
			continue
		}
		if p.Port < 1 || p.Port > 65535 {
			rej.add(f+".port", ReasonInvalidPort, "port %d is outside 1..65535", p.Port)
			continue
		}
		nameKey := p.Name + "/" + string(proto)
		nk := numKey{uint16(p.Port), proto}
		if seenName[nameKey] || seenNum[nk] {
			rej.add(f, ReasonDuplicatePort, "port %q %d/%s repeats an earlier port: ignored", p.Name, p.Port, proto)
			continue
		}
		seenName[nameKey], seenNum[nk] = true, true
		pi := portInfo{name: p.Name, protocol: proto, port: uint16(p.Port)}
		switch np := p.NodePort; {
		case np == 0:
		case np < 1 || np > 65535:
			rej.add(f+".nodePort", ReasonInvalidPort, "node port %d is outside 1..65535: not opened", np)
		case !opts.NodePortRange.Contains(np):
			rej.add(f+".nodePort", ReasonNodePortOutOfRange, "node port %d is outside the range %s: not opened", np, opts.NodePortRange)
		default:
			pi.nodePort = uint16(np)
		}
		si.ports = append(si.ports, pi)
	}
}

// parseProtocol maps a Kubernetes protocol to the graph's; empty means TCP,
// the API default.
func parseProtocol(p v1.Protocol) (graph.Protocol, bool) {
	switch strings.TrimSpace(string(p)) {
	case "", "TCP":
		return graph.TCP, true
	case "UDP":
		return graph.UDP, true
	case "SCTP":
		return graph.SCTP, true
	}
	return "", false
}

func appendUnique(list []netip.Addr, ip netip.Addr) []netip.Addr {
	for _, x := range list {
		if x == ip {
			return list
		}
	}
	return append(list, ip)
}

func containsPrefix(list []netip.Prefix, p netip.Prefix) bool {
	for _, x := range list {
		if x == p {
			return true
		}
	}
	return false
}
