package ovs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"k8s.io/klog/v2"
)

// flushUDP removes the conntrack entries, in the driver's DNAT zone, of
// connections DNATed to UDP endpoints that are gone, so their clients are
// balanced anew instead of sending into the void (upstream does the same
// with conntrack -D). Userspace and kernel datapaths both answer
// ovs-appctl dpctl/flush-conntrack with a reply-tuple filter (OVS >= 3.1).
func (d *Driver) flushUDP(ctx context.Context, eps []graph.Endpoint) {
	if len(eps) == 0 {
		return
	}
	ctl, err := vswitchdControl(d.opts.RunDir)
	if err != nil {
		klog.ErrorS(err, "Cannot flush conntrack entries of removed UDP endpoints")
		return
	}
	for _, e := range eps {
		ipField := "ct_nw_src"
		if e.IP.Is6() {
			ipField = "ct_ipv6_src"
		}
		reply := fmt.Sprintf("%s=%s,ct_nw_proto=17,ct_tp_src=%d", ipField, e.IP, e.Port)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		out, err := exec.CommandContext(cctx, "ovs-appctl", "-t", ctl, "dpctl/flush-conntrack",
			fmt.Sprintf("zone=%d", d.opts.CtZone), "", reply).CombinedOutput()
		cancel()
		if err != nil {
			klog.ErrorS(err, "Flushing conntrack entries failed", "endpoint", e.String(), "output", strings.TrimSpace(string(out)))
			continue
		}
		klog.V(2).InfoS("Flushed conntrack entries of a removed UDP endpoint", "endpoint", e.String())
	}
}

// vswitchdControl finds ovs-vswitchd's control socket in the run directory.
func vswitchdControl(runDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(runDir, "ovs-vswitchd.pid"))
	if err != nil {
		return "", err
	}
	return filepath.Join(runDir, fmt.Sprintf("ovs-vswitchd.%s.ctl", strings.TrimSpace(string(b)))), nil
}
