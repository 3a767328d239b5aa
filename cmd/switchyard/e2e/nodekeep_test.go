//go:build linux

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The steps of TestRealNode that stop switchyard in ways that are not an
// uninstall: each must leave the dataplane as it is (issue 28).

// replaceDaemonSet deletes switchyard's DaemonSet and creates it again
// from the same object, as `kubectl replace --force`, `helm upgrade
// --force` or a GitOps tool changing the selector do. Between the two no
// switchyard runs on the node; its pods must stay served and the held
// connections alive throughout. It returns the new switchyard pod.
func (n *realNode) replaceDaemonSet(t *testing.T, lat *latencies, oldPod string, checks func(what string)) string {
	t.Helper()
	ctx := context.Background()
	daemonSets := n.API.Admin.AppsV1().DaemonSets(chartNamespace)
	list, err := daemonSets.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=switchyard"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("switchyard's DaemonSets: %v (%d)", err, len(list.Items))
	}
	again := list.Items[0].DeepCopy()
	again.ObjectMeta = metav1.ObjectMeta{Name: again.Name, Namespace: again.Namespace, Labels: again.Labels, Annotations: again.Annotations}
	again.Status = appsv1.DaemonSetStatus{}

	start := time.Now()
	if err := daemonSets.Delete(ctx, again.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitPodGone(t, oldPod)
	lat.note("DaemonSet deleted (kubectl replace --force) -> its switchyard pod gone: %d ms", time.Since(start).Milliseconds())
	time.Sleep(2 * time.Second) // no switchyard on the node: the dataplane alone serves
	checks("with the DaemonSet deleted and no switchyard running")

	start = time.Now()
	if _, err := daemonSets.Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := n.switchyardPod(t, oldPod)
	lat.note("DaemonSet created again -> its switchyard pod Ready: %d ms", time.Since(start).Milliseconds())
	checks("after the DaemonSet was created again")
	return pod
}

// refuseWhileRestarting takes switchyard's permissions away (its API
// requests are answered 403, as a broken authorizer or webhook would),
// deletes its pod so that it stops while refused, and gives the
// permissions back: nothing changes on the node. It returns the new pod.
func (n *realNode) refuseWhileRestarting(t *testing.T, lat *latencies, oldPod string, checks func(what string)) string {
	t.Helper()
	ctx := context.Background()
	bindings := n.API.Admin.RbacV1().ClusterRoleBindings()
	list, err := bindings.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=switchyard"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("switchyard's ClusterRoleBindings: %v (%d)", err, len(list.Items))
	}
	binding := list.Items[0].DeepCopy()
	binding.ObjectMeta = metav1.ObjectMeta{Name: binding.Name, Labels: binding.Labels, Annotations: binding.Annotations}
	restore := func() error {
		_, err := bindings.Create(ctx, binding, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	t.Cleanup(func() { _ = restore() })

	if err := bindings.Delete(ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC's cache follows the delete within a moment: wait until the
	// token is refused before stopping switchyard.
	if err := waitFor(30*time.Second, func() error {
		allowed, err := n.mayDo(ctx, binding.Subjects[0], "", "services", "list")
		if err == nil && allowed {
			err = fmt.Errorf("switchyard may still list Services")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := n.API.Admin.CoreV1().Pods(chartNamespace).Delete(ctx, oldPod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitPodGone(t, oldPod)
	lat.note("switchyard refused (403) and its pod deleted -> the pod gone: %d ms", time.Since(start).Milliseconds())
	time.Sleep(2 * time.Second)
	checks("after switchyard stopped while the API server refused it")
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	pod := n.switchyardPod(t, oldPod)
	checks("after switchyard's permissions came back")
	return pod
}

// mayDo asks the API server whether a ServiceAccount may do verb on
// resource in the chart's namespace.
func (n *realNode) mayDo(ctx context.Context, sa rbacv1.Subject, group, resource, verb string) (bool, error) {
	r, err := n.API.Admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
		Spec: authzv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{
				Namespace: chartNamespace, Group: group, Resource: resource, Verb: verb,
			},
		}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

// waitPodGone waits until the pod no longer exists.
func (n *realNode) waitPodGone(t *testing.T, name string) {
	t.Helper()
	if err := waitFor(120*time.Second, func() error {
		_, err := n.API.Admin.CoreV1().Pods(chartNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("pod %s still there (%v)", name, err)
	}); err != nil {
		t.Fatal(err)
	}
}
