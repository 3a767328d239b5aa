//go:build linux

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// apiServerCollections is how many collections kube-apiserver's Go
// runtime has finished so far (go_gc_duration_seconds_count on its
// /metrics). Read before and after switchyard's first sync, it says
// whether the API server collected its heap meanwhile: at scale one
// collection is a large share of its CPU over the first sync, on the
// cores switchyard reads with on this machine (the figure: docs/scale.md).
func apiServerCollections(t testing.TB, c *cluster) float64 {
	t.Helper()
	body := apiServerMetrics(t, c)
	const name = "go_gc_duration_seconds_count"
	if !strings.Contains(body, "\n"+name+" ") {
		t.Fatalf("kube-apiserver's metrics have no %s", name)
	}
	return metric(body, name)
}

// apiServerMetrics is kube-apiserver's /metrics, read within 30 s.
func apiServerMetrics(t testing.TB, c *cluster) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, err := c.Admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("kube-apiserver's metrics: %v", err)
	}
	return string(body)
}
