package app

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// uninstall decides, as switchyard stops, whether its release is being
// uninstalled, so that it removes what its dataplane programmed (as
// `switchyard cleanup`) instead of leaving a bridge, routes and a CNI
// configuration that nothing runs any more. Every other stop (a restart,
// a rolling update, a drain, the DaemonSet deleted and re-created by
// `kubectl replace --force`, `helm upgrade --force` or a GitOps tool, an
// API server refusing switchyard for a while) keeps the dataplane, so the
// node's pods stay on the network.
//
// The decision rests on a deliberate signal, never on an API error or the
// DaemonSet's absence alone: the uninstall marker (--uninstall-marker), a
// ConfigMap the chart's pre-delete hook creates when `helm uninstall`
// starts, before anything is deleted. switchyard watches for it while it
// runs (its identity may be gone by the time it stops). A marker counts
// only when it is newer than switchyard's DaemonSet (one left by an earlier
// uninstall predates a re-installed DaemonSet; both times are the API
// server's). Even then, switchyard cleans up only once its DaemonSet is
// confirmed going: deleted, being deleted, or switchyard's identity
// removed with the release. An uninstall interrupted after the hook leaves
// the DaemonSet in place, and restarts keep the dataplane.
type uninstall struct {
	namespace, daemonSet, marker string
	client                       kubernetes.Interface
	daemonSetCreated             time.Time // zero: not armed (the DaemonSet could not be read at start)
	requested                    atomic.Bool
}

// parseUninstall reads --owner-daemonset NAMESPACE/NAME and
// --uninstall-marker NAME (a ConfigMap in that namespace); neither set is
// nil: switchyard never cleans up by itself.
func parseUninstall(owner, marker string) (*uninstall, error) {
	if owner == "" && marker == "" {
		return nil, nil
	}
	if owner == "" || marker == "" {
		return nil, fmt.Errorf("--owner-daemonset and --uninstall-marker go together (cleanup on uninstall needs both)")
	}
	ns, name, ok := strings.Cut(owner, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--owner-daemonset %q: want NAMESPACE/NAME", owner)
	}
	if strings.Contains(marker, "/") {
		return nil, fmt.Errorf("--uninstall-marker %q: want a ConfigMap name (in the DaemonSet's namespace)", marker)
	}
	return &uninstall{namespace: ns, daemonSet: name, marker: marker}, nil
}

// arm reads the DaemonSet's creation time and starts watching for the
// marker until ctx ends. If the DaemonSet cannot be read, an uninstall is
// never detected (and the log says why).
func (u *uninstall) arm(ctx context.Context, client kubernetes.Interface) {
	if u == nil {
		return
	}
	if client == nil {
		klog.InfoS("--owner-daemonset needs an API server; ignored with --file")
		return
	}
	u.client = client
	getCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ds, err := client.AppsV1().DaemonSets(u.namespace).Get(getCtx, u.daemonSet, metav1.GetOptions{})
	if err != nil {
		klog.ErrorS(err, "Cannot read the DaemonSet switchyard runs in: the dataplane will be kept when it is uninstalled",
			"daemonset", u.namespace+"/"+u.daemonSet)
		return
	}
	u.daemonSetCreated = ds.CreationTimestamp.Time
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(u.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", u.marker).String()
		}))
	inf := factory.Core().V1().ConfigMaps().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { u.observe(obj) },
		UpdateFunc: func(_, obj any) { u.observe(obj) },
	})
	factory.Start(ctx.Done())
}

// observe latches the request when obj is a current marker.
func (u *uninstall) observe(obj any) {
	cm, ok := obj.(*v1.ConfigMap)
	if !ok || !markerCurrent(cm, u.daemonSetCreated) || u.requested.Swap(true) {
		return
	}
	klog.InfoS("Uninstall requested: the dataplane will be removed when the DaemonSet goes",
		"marker", u.namespace+"/"+u.marker, "daemonset", u.namespace+"/"+u.daemonSet)
}

// markerCurrent: the marker was made after the DaemonSet (by the API
// server's clock, to the second: a marker of the same second is not
// trusted, so the error is on the side of keeping the dataplane).
func markerCurrent(cm *v1.ConfigMap, daemonSetCreated time.Time) bool {
	return cm != nil && !daemonSetCreated.IsZero() && cm.CreationTimestamp.After(daemonSetCreated)
}

// wasRequested tells whether the marker was seen, asking the API server once
// more if the watch had not seen it (it may have been created just now).
func (u *uninstall) wasRequested(ctx context.Context) bool {
	if u.requested.Load() {
		return true
	}
	cm, err := u.client.CoreV1().ConfigMaps(u.namespace).Get(ctx, u.marker, metav1.GetOptions{})
	return err == nil && markerCurrent(cm, u.daemonSetCreated)
}

// daemonSetGoing tells whether the DaemonSet is confirmed going, and why.
func (u *uninstall) daemonSetGoing(ctx context.Context) (bool, string) {
	ds, err := u.client.AppsV1().DaemonSets(u.namespace).Get(ctx, u.daemonSet, metav1.GetOptions{})
	switch {
	case err == nil && ds.DeletionTimestamp != nil:
		return true, "the DaemonSet is being deleted"
	case err == nil:
		return false, "the DaemonSet is still there (an interrupted uninstall?)"
	case apierrors.IsNotFound(err):
		return true, "the DaemonSet is gone"
	case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
		return true, "switchyard's identity was removed with the release"
	}
	return false, "cannot read the DaemonSet: " + err.Error()
}

// cleanupIfUninstalled removes what the dataplane programmed when the
// release is being uninstalled (see uninstall), and says whether it did.
func (u *uninstall) cleanupIfUninstalled(cleanup func(context.Context) error) bool {
	if u == nil || u.daemonSetCreated.IsZero() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !u.wasRequested(ctx) {
		return false
	}
	going, why := u.daemonSetGoing(ctx)
	if !going {
		klog.InfoS("Uninstall requested but not confirmed: keeping the dataplane; run `switchyard cleanup` on the node if the release is gone",
			"reason", why)
		return false
	}
	klog.InfoS("Uninstalled: removing what the dataplane programmed", "daemonset", u.namespace+"/"+u.daemonSet, "reason", why)
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	if err := cleanup(cctx); err != nil {
		klog.ErrorS(err, "Cleanup after uninstall failed; run `switchyard cleanup` on the node")
	}
	return true
}
