//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// profileAPIServer takes CPU profiles of kube-apiserver (its
// /debug/pprof, on by default) back to back, each over about each, into
// dir as prefix-HHMMSS.prof named by when it began, until stop is
// called: what the API server did while switchyard waited for it
// (SWITCHYARD_BENCH_PROFILES=dir). stop waits for the profile under way
// (at most each and 30 s) and reports the first error.
func profileAPIServer(c *cluster, dir, prefix string, each time.Duration) (stop func(testing.TB)) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var failed error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			began := time.Now()
			// Bounded: an API server that stops answering fails the
			// profile instead of holding stop forever.
			req, done := context.WithTimeout(context.Background(), each+30*time.Second)
			prof, err := c.Admin.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
				Param("seconds", fmt.Sprint(int(each.Seconds()))).DoRaw(req)
			done()
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, prefix+"-"+began.Format("150405")+".prof"), prof, 0o644)
			}
			if err != nil {
				failed = err
				return
			}
		}
	}()
	return func(t testing.TB) {
		cancel()
		wg.Wait()
		if failed != nil {
			t.Errorf("kube-apiserver's CPU profile: %v", failed)
		}
	}
}
