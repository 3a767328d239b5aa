package app

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestParseUninstall(t *testing.T) {
	for _, bad := range [][2]string{{"name", "m"}, {"/name", "m"}, {"ns/", "m"}, {"a/b/c", "m"}, {"ns/sy", ""}, {"", "m"}, {"ns/sy", "ns/m"}} {
		if _, err := parseUninstall(bad[0], bad[1]); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	u, err := parseUninstall("kube-system/switchyard", "switchyard-uninstalling")
	if err != nil || u.namespace != "kube-system" || u.daemonSet != "switchyard" || u.marker != "switchyard-uninstalling" {
		t.Errorf("got %+v, %v", u, err)
	}
	if u, err := parseUninstall("", ""); u != nil || err != nil {
		t.Errorf("empty: got %+v, %v", u, err)
	}
}

// TestCleanupOnlyOnUninstall: the dataplane is removed only when the
// uninstall marker, newer than the DaemonSet, asked for it and the
// DaemonSet is then confirmed going. The DaemonSet's absence or an API
// error alone (kubectl replace --force, a GitOps re-create, an authorizer
// refusing for a while) never removes it.
func TestCleanupOnlyOnUninstall(t *testing.T) {
	created := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "sy", CreationTimestamp: metav1.NewTime(created)}}
	deleting := ds.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: created.Add(time.Hour)}
	deleting.Finalizers = []string{"foregroundDeletion"}
	marker := func(at time.Time) *v1.ConfigMap {
		return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "sy-uninstalling", CreationTimestamp: metav1.NewTime(at)}}
	}
	fresh, stale, sameSecond := marker(created.Add(time.Hour)), marker(created.Add(-time.Hour)), marker(created)
	gr := schema.GroupResource{Group: "apps", Resource: "daemonsets"}
	notFound := apierrors.NewNotFound(gr, "sy")
	forbidden := apierrors.NewForbidden(gr, "sy", errors.New("no"))
	for _, tc := range []struct {
		name       string
		atStart    []runtime.Object
		dsAtStop   *appsv1.DaemonSet
		dsErr      error // every DaemonSet get after the start
		markerErr  error // every ConfigMap get after the start
		wantClean  bool
		wantLogged bool // the watch saw the marker
	}{
		{name: "restart: nothing asked", atStart: []runtime.Object{ds}, dsAtStop: ds},
		{name: "DaemonSet deleted without the marker (kubectl replace --force)", atStart: []runtime.Object{ds}, dsErr: notFound},
		{name: "DaemonSet being deleted without the marker", atStart: []runtime.Object{ds}, dsAtStop: deleting},
		{name: "403 during a restart, no marker", atStart: []runtime.Object{ds}, dsErr: forbidden},
		{name: "a marker older than the DaemonSet (left by an earlier uninstall)", atStart: []runtime.Object{ds, stale}, dsErr: notFound},
		{name: "a marker of the DaemonSet's second is not trusted", atStart: []runtime.Object{ds, sameSecond}, dsErr: notFound},
		{name: "helm uninstall: marker, DaemonSet gone", atStart: []runtime.Object{ds, fresh}, dsErr: notFound, wantClean: true, wantLogged: true},
		{name: "helm uninstall: marker, DaemonSet being deleted", atStart: []runtime.Object{ds, fresh}, dsAtStop: deleting, wantClean: true, wantLogged: true},
		{name: "helm uninstall: marker, then the identity removed", atStart: []runtime.Object{ds, fresh}, dsErr: apierrors.NewUnauthorized("invalid token"),
			markerErr: apierrors.NewUnauthorized("invalid token"), wantClean: true, wantLogged: true},
		{name: "interrupted uninstall: marker, DaemonSet still there", atStart: []runtime.Object{ds, fresh}, dsAtStop: ds, wantLogged: true},
		{name: "marker, API server unreachable at stop", atStart: []runtime.Object{ds, fresh}, dsErr: errors.New("connection refused"), wantLogged: true},
		{name: "never armed: the DaemonSet could not be read at start", atStart: []runtime.Object{fresh}, dsErr: notFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.atStart...)
			// What the API server answers once switchyard stops. The
			// reactors are in place from the start (the fake's list of
			// them is not safe to change while the watch may still list).
			var stopped atomic.Bool
			client.PrependReactor("get", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
				switch {
				case !stopped.Load():
					return false, nil, nil
				case tc.dsErr != nil:
					return true, nil, tc.dsErr
				}
				return true, tc.dsAtStop, nil
			})
			client.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				if !stopped.Load() || tc.markerErr == nil {
					return false, nil, nil
				}
				return true, nil, tc.markerErr
			})
			u, _ := parseUninstall("kube-system/sy", "sy-uninstalling")
			ctx, cancel := context.WithCancel(context.Background())
			u.arm(ctx, client)
			if tc.wantLogged {
				deadline := time.Now().Add(5 * time.Second)
				for !u.requested.Load() && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
			}
			cancel() // switchyard stops: the watch ends first
			stopped.Store(true)
			if u.requested.Load() != tc.wantLogged {
				t.Errorf("the watch saw a current marker: %v, want %v", u.requested.Load(), tc.wantLogged)
			}
			cleaned := false
			got := u.cleanupIfUninstalled(func(context.Context) error { cleaned = true; return nil })
			if got != tc.wantClean || cleaned != tc.wantClean {
				t.Errorf("cleaned %v (reported %v), want %v", cleaned, got, tc.wantClean)
			}
		})
	}
	var none *uninstall
	if none.cleanupIfUninstalled(func(context.Context) error { t.Error("cleaned without the flags"); return nil }) {
		t.Error("reported a cleanup without the flags")
	}
}

// TestMarkerCreatedAtStopIsAskedFor: a marker the watch has not delivered
// yet is still found by the question asked at stop.
func TestMarkerCreatedAtStopIsAskedFor(t *testing.T) {
	created := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sy", CreationTimestamp: metav1.NewTime(created)}}
	client := fake.NewClientset(ds)
	u, _ := parseUninstall("ns/sy", "sy-uninstalling")
	ctx, cancel := context.WithCancel(context.Background())
	u.arm(ctx, client)
	cancel()
	if _, err := client.CoreV1().ConfigMaps("ns").Create(context.Background(), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "sy-uninstalling", CreationTimestamp: metav1.NewTime(created.Add(time.Minute))}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.AppsV1().DaemonSets("ns").Delete(context.Background(), "sy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !u.cleanupIfUninstalled(func(context.Context) error { return nil }) {
		t.Error("the marker asked for at stop was not honoured")
	}
}
