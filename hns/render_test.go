package hns_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/hns"
	v1 "k8s.io/api/core/v1"
)

// renderCluster renders three Services (added in the given order) that
// share one remote endpoint.
func renderCluster(t *testing.T, order []int) []byte {
	t.Helper()
	tr := tracker.New(tracker.Options{NodeName: "node-1", Build: build.Options{Annotations: (&hns.Factory{}).Annotations()}})
	tr.UpsertNode(Node("node-1", "zone-a", nodeIP.String()))
	add := []func(){
		func() {
			tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeNodePort), Port("http", tcp, 80, 30080))))
			tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"), remote("10.244.2.7"))))
		},
		func() {
			tr.UpsertService(object.ServiceOf(Service("ns", "dns", ClusterIPs("10.96.0.2"), Port("dns", udp, 53, 0), Port("dns-tcp", tcp, 53, 0))))
			tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "dns-1", "dns", v4, SlicePort("dns", udp, 53), SlicePort("dns-tcp", tcp, 53), remote("10.244.2.7"))))
		},
		func() {
			tr.UpsertService(object.ServiceOf(Service("ns", "lb", ClusterIPs("10.96.0.30"), Type(v1.ServiceTypeLoadBalancer), Port("https", tcp, 443, 30443),
				Ingress("203.0.113.9"), ExternalIPs("198.51.100.4"), ETPLocal)))
			tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "lb-1", "lb", v4, SlicePort("https", tcp, 8443), local("10.244.1.6"), remote("10.244.2.8"))))
		},
	}
	for _, i := range order {
		add[i]()
	}
	var out bytes.Buffer
	f := &hns.Factory{Options: hns.Options{NetworkName: "cbr0", StateFile: "unused"}}
	if err := f.Render(&out, dataplanes.Env{}, tr.Snapshot()); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestRenderIsStableAndUsesHCNFieldNames(t *testing.T) {
	first := renderCluster(t, []int{0, 1, 2})
	if again := renderCluster(t, []int{2, 0, 1}); !bytes.Equal(first, again) {
		t.Fatalf("render depends on the order objects arrived in:\n%s\n---\n%s", first, again)
	}
	var doc struct {
		LoadBalancers   []map[string]json.RawMessage `json:"loadBalancers"`
		RemoteEndpoints []map[string]json.RawMessage `json:"remoteEndpoints"`
	}
	if err := json.Unmarshal(first, &doc); err != nil {
		t.Fatal(err)
	}
	// hcn.HostComputeLoadBalancer and hcn.HostComputeEndpoint serialise
	// these names; anything else would not round-trip through HNS.
	lbFields := []string{"HostComputeEndpoints", "SourceVIP", "FrontendVIPs", "PortMappings", "SchemaVersion", "Flags", "ID"}
	epFields := []string{"ID", "Name", "HostComputeNetwork", "Policies", "IpConfigurations", "MacAddress", "Flags", "SchemaVersion"}
	var keys []string
	for _, lb := range doc.LoadBalancers {
		for k := range lb {
			if !slices.Contains(lbFields, k) {
				t.Errorf("load balancer field %q is not one hcn serialises", k)
			}
		}
		var pms []struct {
			Protocol     uint32
			ExternalPort uint16
		}
		if err := json.Unmarshal(lb["PortMappings"], &pms); err != nil || len(pms) != 1 {
			t.Fatalf("PortMappings %s: %v", lb["PortMappings"], err)
		}
		var vips []string
		_ = json.Unmarshal(lb["FrontendVIPs"], &vips)
		vip := ""
		if len(vips) > 0 {
			vip = vips[0]
		}
		keys = append(keys, fmt.Sprintf("%s|%05d|%03d", vip, pms[0].ExternalPort, pms[0].Protocol))
	}
	// web: ClusterIP + NodePort; dns: 2 ClusterIP; lb: ClusterIP + NodePort + ingress + external IP.
	if len(keys) != 8 {
		t.Fatalf("got %d load balancers, want 8: %v", len(keys), keys)
	}
	if !slices.IsSorted(keys) {
		t.Errorf("load balancers not sorted by frontend: %v", keys)
	}
	var remotes []string
	for _, ep := range doc.RemoteEndpoints {
		for k := range ep {
			if !slices.Contains(epFields, k) {
				t.Errorf("endpoint field %q is not one hcn serialises", k)
			}
		}
		var id string
		_ = json.Unmarshal(ep["ID"], &id)
		remotes = append(remotes, id)
	}
	// 10.244.2.7 backs web and dns but is one HNS endpoint.
	if want := []string{"remote:10.244.2.7", "remote:10.244.2.8"}; !slices.Equal(remotes, want) {
		t.Errorf("remote endpoints %v, want %v", remotes, want)
	}
}
