package hns_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// BenchmarkOneEndpointChange flips one remote endpoint of one ClusterIP
// Service between ready and not ready among n Services (10 endpoints
// each) and reports the HNS calls each change costs, on Windows Server
// 2025 (ModifyLoadBalancer) and 2022 (delete + create). The driver's own
// time is measured against the in-memory simulator, so it is the
// driver's bookkeeping, not HNS's latency.
func BenchmarkOneEndpointChange(b *testing.B) {
	for _, build := range []hnssim.Build{hnssim.Windows2025, hnssim.Windows2022} {
		for _, n := range []int{1000, 10000} {
			c := testobj.Synthetic(n, 10)
			tr := tracker.New(tracker.Options{NodeName: "node-0"})
			tr.UpsertNode(c.Node)
			sim := hnssim.New(build)
			sim.AddNetwork("cbr0", "L2Bridge")
			for _, s := range c.Services {
				tr.UpsertService(object.ServiceOf(s))
			}
			for _, s := range c.Slices {
				tr.UpsertEndpointSlice(object.EndpointSliceOf(s))
			}
			addLocalPods(sim, c)
			timed := &timedClient{Client: sim}
			d, err := hns.NewDriver(timed, hns.Options{NetworkName: "cbr0", StateFile: filepath.Join(b.TempDir(), "owned.json")}, dataplanes.Env{})
			if err != nil {
				b.Fatal(err)
			}
			full := tr.Next(true)
			if err := d.Sync(context.Background(), full.Snapshot); err != nil {
				b.Fatal(err)
			}
			tr.Commit(full)

			target := c.Slices[n/2] // a ClusterIP Service
			flipped := target.DeepCopy()
			notReady := false
			flipped.Endpoints[3].Conditions.Ready = &notReady // on node-3: a remote endpoint
			// Converted once, as a source hands them over: the core's work is measured.
			versions := []*object.EndpointSlice{object.EndpointSliceOf(flipped), object.EndpointSliceOf(target)}
			b.Run(fmt.Sprintf("windows=%d/services=%d", build, n), func(b *testing.B) {
				b.ReportAllocs()
				sim.ResetCalls()
				i := 0
				var driver time.Duration
				for b.Loop() {
					tr.UpsertEndpointSlice(versions[i%2])
					bt := tr.Next(false)
					timed.spent = 0
					began := time.Now()
					if err := d.Apply(context.Background(), bt.Delta); err != nil {
						b.Fatal(err)
					}
					driver += time.Since(began) - timed.spent
					tr.Commit(bt)
					i++
				}
				calls := sim.Calls()
				// The driver's own time: Apply, less the time spent in the
				// simulated HNS (ns/op also holds the core's and the
				// simulator's).
				b.ReportMetric(float64(driver.Nanoseconds())/float64(i)/1e3, "driver-µs/op")
				b.ReportMetric(float64(calls["UpdateLoadBalancer"])/float64(i), "lb-updates/op")
				b.ReportMetric(float64(calls["CreateLoadBalancer"]+calls["DeleteLoadBalancer"])/float64(i), "lb-create+delete/op")
				b.ReportMetric(float64(calls["CreateEndpoint"]+calls["DeleteEndpoint"])/float64(i), "ep-create+delete/op")
			})
		}
	}
}

// BenchmarkFullSync times the HNS driver's cold sync of n Services (every
// load balancer created) and a resync with nothing changed, against the
// simulator, and counts the HNS calls of each.
func BenchmarkFullSync(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("windows=%d/services=%d", hnssim.Windows2025, n), func(b *testing.B) {
			c := testobj.Synthetic(n, 10)
			tr := tracker.New(tracker.Options{NodeName: "node-0"})
			c.Feed(tr)
			snap := tr.Next(true).Snapshot
			var cold, resync time.Duration
			var coldCalls, resyncCalls int
			for b.Loop() {
				b.StopTimer()
				sim := hnssim.New(hnssim.Windows2025)
				sim.AddNetwork("cbr0", "L2Bridge")
				addLocalPods(sim, c)
				d, err := hns.NewDriver(sim, hns.Options{NetworkName: "cbr0", StateFile: filepath.Join(b.TempDir(), "owned.json")}, dataplanes.Env{})
				if err != nil {
					b.Fatal(err)
				}
				sim.ResetCalls()
				b.StartTimer()
				t0 := time.Now()
				if err := d.Sync(context.Background(), snap); err != nil {
					b.Fatal(err)
				}
				cold = time.Since(t0)
				coldCalls = total(sim.Calls())
				sim.ResetCalls()
				t0 = time.Now()
				if err := d.Sync(context.Background(), snap); err != nil {
					b.Fatal(err)
				}
				resync = time.Since(t0)
				resyncCalls = mutating(sim.Calls())
			}
			b.ReportMetric(cold.Seconds()*1000, "cold-sync-ms")
			b.ReportMetric(float64(coldCalls), "cold-hns-calls")
			b.ReportMetric(resync.Seconds()*1000, "resync-ms")
			b.ReportMetric(float64(resyncCalls), "resync-changing-calls")
		})
	}
}

func total(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}

// mutating counts the calls that change HNS (creates, updates, deletes).
func mutating(calls map[string]int) int {
	n := 0
	for op, c := range calls {
		if strings.HasPrefix(op, "Create") || strings.HasPrefix(op, "Update") || strings.HasPrefix(op, "Delete") {
			n += c
		}
	}
	return n
}

// addLocalPods gives the simulated node the HNS endpoints a CNI would
// have made for the synthetic cluster's pods on node-0.
func addLocalPods(sim *hnssim.Sim, c testobj.Cluster) {
	for _, s := range c.Slices {
		for _, e := range s.Endpoints {
			if *e.NodeName == "node-0" {
				sim.AddLocalEndpoint("cbr0", "pod-"+e.Addresses[0], e.Addresses[0])
			}
		}
	}
}

// timedClient adds up the time spent in HNS calls.
type timedClient struct {
	hns.Client
	spent time.Duration
}

func (c *timedClient) time(began time.Time) { c.spent += time.Since(began) }

func (c *timedClient) Network(name string) (*hns.Network, error) {
	defer c.time(time.Now())
	return c.Client.Network(name)
}

func (c *timedClient) Endpoints(networkID string) ([]hns.Endpoint, error) {
	defer c.time(time.Now())
	return c.Client.Endpoints(networkID)
}

func (c *timedClient) CreateEndpoint(networkID string, ep *hns.Endpoint) (*hns.Endpoint, error) {
	defer c.time(time.Now())
	return c.Client.CreateEndpoint(networkID, ep)
}

func (c *timedClient) DeleteEndpoint(id string) error {
	defer c.time(time.Now())
	return c.Client.DeleteEndpoint(id)
}

func (c *timedClient) LoadBalancers() ([]hns.LoadBalancer, error) {
	defer c.time(time.Now())
	return c.Client.LoadBalancers()
}

func (c *timedClient) CreateLoadBalancer(lb *hns.LoadBalancer) (*hns.LoadBalancer, error) {
	defer c.time(time.Now())
	return c.Client.CreateLoadBalancer(lb)
}

func (c *timedClient) UpdateLoadBalancer(id string, lb *hns.LoadBalancer) (*hns.LoadBalancer, error) {
	defer c.time(time.Now())
	return c.Client.UpdateLoadBalancer(id, lb)
}

func (c *timedClient) LoadBalancer(id string) (*hns.LoadBalancer, error) {
	defer c.time(time.Now())
	return c.Client.LoadBalancer(id)
}

func (c *timedClient) DeleteLoadBalancer(id string) error {
	defer c.time(time.Now())
	return c.Client.DeleteLoadBalancer(id)
}
