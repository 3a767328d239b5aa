//go:build linux

package hostnet

import (
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
)

var namespaceSeq atomic.Int32

// testNamespace makes a network namespace of the test's own (removed with
// it) and returns its path; the test is skipped without root.
func testNamespace(t *testing.T, tag string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root (a network namespace); make test runs it as root")
	}
	name := fmt.Sprintf("sy-%s-%d-%d", tag, os.Getpid(), namespaceSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return "/var/run/netns/" + name
}
