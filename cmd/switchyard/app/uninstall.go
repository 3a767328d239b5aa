package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// ownerDaemonSet is the DaemonSet switchyard runs in (--owner-daemonset
// NAMESPACE/NAME, set by the chart). When switchyard stops and that
// DaemonSet is gone, the release was uninstalled: switchyard removes what
// its dataplane programmed, as `switchyard cleanup` would, instead of
// leaving a bridge, routes and a CNI configuration that nothing runs any
// more. Any other stop (a restart, a rolling update, a node drain) keeps
// the dataplane, so connections survive it.
//
// The decision never guesses: it is made only when the DaemonSet could be
// read at start (so the identity and its RBAC were right), and only on a
// clear answer at stop — not found, being deleted, or the identity itself
// gone (401/403: helm deletes the ServiceAccount and the role right after
// the DaemonSet). An API server that does not answer keeps the dataplane.
type ownerDaemonSet struct {
	namespace, name string
	client          kubernetes.Interface
	armed           bool
}

// parseOwnerDaemonSet reads NAMESPACE/NAME ("" for none).
func parseOwnerDaemonSet(s string) (*ownerDaemonSet, error) {
	if s == "" {
		return nil, nil
	}
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--owner-daemonset %q: want NAMESPACE/NAME", s)
	}
	return &ownerDaemonSet{namespace: ns, name: name}, nil
}

// arm checks at start that the DaemonSet can be read; if not, removal is
// never detected (and the log says why).
func (o *ownerDaemonSet) arm(ctx context.Context, client kubernetes.Interface) {
	if o == nil {
		return
	}
	if client == nil {
		klog.InfoS("--owner-daemonset needs an API server; ignored with --file")
		return
	}
	o.client = client
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := client.AppsV1().DaemonSets(o.namespace).Get(ctx, o.name, metav1.GetOptions{}); err != nil {
		klog.ErrorS(err, "Cannot read the DaemonSet switchyard runs in: the dataplane will be kept when it is uninstalled",
			"daemonset", o.namespace+"/"+o.name)
		return
	}
	o.armed = true
}

// removed tells, as switchyard stops, whether its DaemonSet is gone, and why.
func (o *ownerDaemonSet) removed() (bool, string) {
	if o == nil || !o.armed {
		return false, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ds, err := o.client.AppsV1().DaemonSets(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
	switch {
	case err == nil && ds.DeletionTimestamp != nil:
		return true, "the DaemonSet is being deleted"
	case err == nil:
		return false, ""
	case apierrors.IsNotFound(err):
		return true, "the DaemonSet is gone"
	case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
		return true, "switchyard's identity was removed with the release: " + err.Error()
	default:
		klog.ErrorS(err, "Cannot tell whether switchyard was uninstalled: keeping the dataplane")
		return false, ""
	}
}

// cleanupIfRemoved removes what the dataplane programmed when the
// DaemonSet was uninstalled, and says whether it was.
func (o *ownerDaemonSet) cleanupIfRemoved(cleanup func(context.Context) error) bool {
	gone, why := o.removed()
	if !gone {
		return false
	}
	klog.InfoS("Uninstalled: removing what the dataplane programmed", "daemonset", o.namespace+"/"+o.name, "reason", why)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cleanup(ctx); err != nil {
		klog.ErrorS(err, "Cleanup after uninstall failed; run `switchyard cleanup` on the node")
	}
	return true
}
