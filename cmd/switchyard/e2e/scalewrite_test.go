//go:build linux

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/testobj"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// populate writes the synthetic Services and their slices as a cluster
// has them, from 16 writers.
func populate(b testing.TB, client kubernetes.Interface, syn testobj.Cluster) {
	ctx := context.Background()
	err := parallel(16, len(syn.Services), func(i int) error {
		svc := syn.Services[i].DeepCopy()
		// The API server allocates ClusterIPs and node ports.
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs, svc.Spec.HealthCheckNodePort = "", nil, 0
		for j := range svc.Spec.Ports {
			svc.Spec.Ports[j].NodePort = 0
		}
		svc.Spec.Selector = map[string]string{"app": svc.Name}
		made, err := client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("service %d: %w", i, err)
		}
		sl := syn.Slices[i].DeepCopy()
		yes := true
		sl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: made.Name, UID: made.UID, Controller: &yes, BlockOwnerDeletion: &yes}}
		sl.Labels[discovery.LabelManagedBy] = "endpointslice-controller.k8s.io"
		sl.Annotations = map[string]string{object.AnnotationLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339Nano)}
		for j := range sl.Endpoints {
			sl.Endpoints[j].TargetRef = &v1.ObjectReference{Kind: "Pod", Namespace: sl.Namespace,
				Name: fmt.Sprintf("%s-7d9f8c6b5-%05d", made.Name, j), UID: types.UID(fmt.Sprintf("0f1e2d3c-%04x-4b5a-8978-%012x", j, i))}
		}
		if _, err := client.DiscoveryV1().EndpointSlices(sl.Namespace).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("slice %d: %w", i, err)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// churn makes changes EndpointSlice changes, each one endpoint of a
// different Service turning ready or not, from 8 writers. Each carries
// the time of its write as the EndpointSlice controller's
// last-change-trigger-time, which both proxies measure
// network_programming_duration_seconds from.
func churn(b *testing.B, client kubernetes.Interface, syn testobj.Cluster, changes int, ready bool) {
	ctx := context.Background()
	err := parallel(8, changes, func(i int) error {
		sl := syn.Slices[(i*7919)%len(syn.Slices)]
		patch := fmt.Sprintf(`[{"op":"replace","path":"/endpoints/0/conditions/ready","value":%t},`+
			`{"op":"add","path":"/metadata/annotations/%s","value":%q}]`,
			ready, strings.ReplaceAll(object.AnnotationLastChangeTriggerTime, "/", "~1"), time.Now().UTC().Format(time.RFC3339Nano))
		_, err := client.DiscoveryV1().EndpointSlices(sl.Namespace).Patch(ctx, sl.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

// parallel calls f for 0..n-1 from workers goroutines; a worker stops at
// its first error, and the first error is returned.
func parallel(workers, n int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for wk := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := wk; i < n; i += workers {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
