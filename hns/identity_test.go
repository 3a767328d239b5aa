package hns_test

import (
	"os"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
	v1 "k8s.io/api/core/v1"
)

// normaliseEverything answers every field the driver does not rely on
// HNS echoing differently from how it was asked, and the ones it does in
// another form (upper-case IDs, an unspecified VIP for NodePorts): a
// what-if, nothing documents that HNS does any of it.
func normaliseEverything(lb *hns.LoadBalancer) {
	for i, id := range lb.HostComputeEndpoints {
		lb.HostComputeEndpoints[i] = strings.ToUpper(id)
	}
	if len(lb.FrontendVIPs) == 0 {
		lb.FrontendVIPs = []string{"0.0.0.0"}
	}
	lb.SourceVIP = ""
	lb.SchemaVersion = hns.SchemaVersion{Major: 2, Minor: 2}
	lb.Flags |= 0x100
	for i := range lb.PortMappings {
		lb.PortMappings[i].Flags |= 0x40
		lb.PortMappings[i].DistributionType = 0
	}
}

func TestIdentityIsWhatHNSEchoesAndWhatWasAsked(t *testing.T) {
	w := newWorld(t, hnssim.Windows2025, "L2Bridge")
	w.sim.EchoRewritten(normaliseEverything)
	w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeNodePort), ClientIPAffinity(60),
		Port("http", tcp, 80, 30080))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"), remote("10.244.2.7"))))
	w.mustSync()

	w.sim.ResetCalls()
	w.mustSync()
	if c := lbCalls(w.sim.Calls()); len(c) != 0 {
		t.Fatalf("a full sync over what HNS answered differently made calls %v", c)
	}
	w.start() // a restart adopts through the ownership record
	w.mustSync()
	if c := lbCalls(w.sim.Calls()); len(c) != 0 {
		t.Fatalf("a restart made calls %v", c)
	}
	// An endpoint change is one modify per load balancer, read back
	// through upper-case IDs; the remote endpoint's last user going
	// deletes it.
	w.sim.ResetCalls()
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"))))
	w.mustApply()
	if c := lbCalls(w.sim.Calls()); c["UpdateLoadBalancer"] != 2 || c["CreateLoadBalancer"] != 0 || c["DeleteEndpoint"] != 1 {
		t.Fatalf("one endpoint gone: calls %v, want 2 modifies and the remote endpoint deleted", c)
	}
	// What HNS does not echo is still followed: affinity off replaces
	// both load balancers.
	w.sim.ResetCalls()
	w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeNodePort), Port("http", tcp, 80, 30080))))
	w.mustApply()
	if c := lbCalls(w.sim.Calls()); c["DeleteLoadBalancer"] != 2 || c["CreateLoadBalancer"] != 2 {
		t.Fatalf("affinity removed: calls %v, want both load balancers replaced", c)
	}
}

// An ownership record written before the digest was kept: adoption
// compares HNS's answer whole, as before, and makes no calls.
func TestRecordWithoutDigestIsAdopted(t *testing.T) {
	w := newWorld(t, hnssim.Windows2025, "L2Bridge")
	twoServices(w)
	w.mustSync()
	b, err := os.ReadFile(w.opts.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"intent":`) {
			continue // older records had no intents either
		}
		if i := strings.Index(line, `,"asked":`); i > 0 {
			line = line[:i] + "}"
		}
		kept = append(kept, line)
	}
	if err := os.WriteFile(w.opts.StateFile, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(kept, ""), "asked") {
		t.Fatal("the digest is still in the record")
	}
	w.start()
	w.sim.ResetCalls()
	w.mustSync()
	if c := lbCalls(w.sim.Calls()); len(c) != 0 {
		t.Fatalf("adopting an older record made calls %v", c)
	}
}
