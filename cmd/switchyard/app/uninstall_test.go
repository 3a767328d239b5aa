package app

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestParseOwnerDaemonSet(t *testing.T) {
	for _, bad := range []string{"name", "/name", "ns/", "a/b/c"} {
		if _, err := parseOwnerDaemonSet(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	o, err := parseOwnerDaemonSet("kube-system/switchyard")
	if err != nil || o.namespace != "kube-system" || o.name != "switchyard" {
		t.Errorf("got %+v, %v", o, err)
	}
	if o, err := parseOwnerDaemonSet(""); o != nil || err != nil {
		t.Errorf("empty: got %+v, %v", o, err)
	}
}

// TestOwnerDaemonSetRemoval: the dataplane is cleaned up only on a clear
// answer that the DaemonSet (or the identity the release gave switchyard)
// is gone, and only when it could be read at start.
func TestOwnerDaemonSetRemoval(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "sy"}}
	deleting := ds.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	deleting.Finalizers = []string{"foregroundDeletion"}
	gr := schema.GroupResource{Group: "apps", Resource: "daemonsets"}
	for _, tc := range []struct {
		name      string
		atStart   []runtime.Object
		atStop    error // returned by every get after the start
		stopObj   *appsv1.DaemonSet
		wantClean bool
	}{
		{name: "still there (restart, rolling update)", atStart: []runtime.Object{ds}, stopObj: ds},
		{name: "deleted", atStart: []runtime.Object{ds}, atStop: apierrors.NewNotFound(gr, "sy"), wantClean: true},
		{name: "being deleted", atStart: []runtime.Object{ds}, stopObj: deleting, wantClean: true},
		{name: "role removed", atStart: []runtime.Object{ds}, atStop: apierrors.NewForbidden(gr, "sy", errors.New("no")), wantClean: true},
		{name: "service account removed", atStart: []runtime.Object{ds}, atStop: apierrors.NewUnauthorized("invalid token"), wantClean: true},
		{name: "API server unreachable", atStart: []runtime.Object{ds}, atStop: errors.New("connection refused")},
		{name: "never readable: not armed", atStart: nil, atStop: apierrors.NewNotFound(gr, "sy")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.atStart...)
			o, _ := parseOwnerDaemonSet("kube-system/sy")
			o.arm(context.Background(), client)
			client.PrependReactor("get", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
				if tc.atStop != nil {
					return true, nil, tc.atStop
				}
				return true, tc.stopObj, nil
			})
			cleaned := false
			got := o.cleanupIfRemoved(func(context.Context) error { cleaned = true; return nil })
			if got != tc.wantClean || cleaned != tc.wantClean {
				t.Errorf("cleaned %v (reported %v), want %v", cleaned, got, tc.wantClean)
			}
		})
	}
	var none *ownerDaemonSet
	if none.cleanupIfRemoved(func(context.Context) error { t.Error("cleaned without the flag"); return nil }) {
		t.Error("reported a cleanup without the flag")
	}
}
