package ovs

import (
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn/ofconntest"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// largeCluster is 200 ordinary Services (10 endpoints each) and one
// dual-stack NodePort Service with perFamily endpoints in each family, in
// slices of 1000, on a dual-stack node-0. It returns the big Service's
// slices too.
func largeCluster(perFamily int, opts ...ServiceOption) (*tracker.Tracker, []*discovery.EndpointSlice) {
	tr := tracker.New(tracker.Options{NodeName: "node-0", Peers: true})
	tr.UpsertNode(WithPodCIDRs(Node("node-0", "zone-0", "192.168.0.10", "fd00:100::10"), "10.244.0.0/24", "fd00:244::/64"))
	c := Synthetic(200, 10)
	for i := range c.Services {
		tr.UpsertService(object.ServiceOf(c.Services[i]))
		tr.UpsertEndpointSlice(object.EndpointSliceOf(c.Slices[i]))
	}
	opts = append([]ServiceOption{Type(v1.ServiceTypeNodePort), func(s *v1.Service) {
		s.Spec.Ports[0].NodePort = 32100
	}}, opts...)
	return tr, withLarge(tr, perFamily, true, opts...)
}

// installedBuckets counts the buckets the bridge holds.
func installedBuckets(br *ofconntest.Bridge) int {
	return strings.Count(br.Dump(), "bucket=bucket_id:")
}

// A dual-stack NodePort Service of 10 000 endpoints a family (9 000
// ready) next to 200 ordinary ones is programmed completely, in one
// round; one endpoint changing is its leaf group and the group above it,
// and no flow. With ClientIP affinity and externalTrafficPolicy: Local
// too.
func TestLargeServiceIsProgrammedNextToOthers(t *testing.T) {
	for name, opts := range map[string][]ServiceOption{
		"cluster":  nil,
		"affinity": {ClientIPAffinity(600)},
		"etp-local": {func(s *v1.Service) {
			s.Spec.Type = v1.ServiceTypeLoadBalancer
			s.Spec.HealthCheckNodePort = 32101
		}, ETPLocal, Ingress("203.0.113.99")},
	} {
		t.Run(name, func(t *testing.T) {
			tr, slices := largeCluster(10_000, opts...)
			md := newMemDriver(t, ofconntest.NewBridge(), tr)
			md.mustSync()
			md.converged()
			if c := md.br.Counts(); c.Bundles != 1 || c.Refused != 0 {
				t.Fatalf("the first sync took %+v, want one bundle", c)
			}
			// 200 Services of 10 buckets, and the big one's 9 000 ready
			// endpoints a family, at least once.
			if got, least := installedBuckets(md.br), 200*10+2*9_000; got < least {
				t.Fatalf("the bridge holds %d buckets, want at least %d", got, least)
			}
			before := md.br.Counts()
			flipped := slices[3].DeepCopy()
			notReady := false
			flipped.Endpoints[17].Conditions.Ready = &notReady
			tr.UpsertEndpointSlice(object.EndpointSliceOf(flipped))
			md.mustApply()
			md.converged()
			flowMods := 0
			if name == "affinity" {
				flowMods = 1 // the endpoint's DNAT flow goes
			}
			// The endpoint is in the internal list (and, with Cluster
			// policy, the same external one): one leaf, one parent.
			want := ofconntest.Counts{Bundles: 1, GroupMods: 2, FlowMods: flowMods}
			if got := mods(before, md.br.Counts()); got != want {
				t.Fatalf("one endpoint changing sent %+v, want %+v", got, want)
			}
		})
	}
}
