package plugin

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func pod(name, node string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, Labels: map[string]string{"app.kubernetes.io/name": "switchyard"}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{}
		p.Finalizers = []string{"test"}
	}
	return p
}

// The node's running switchyard pod is the one asked: not another node's,
// not one being deleted, not one still pending, not another app's.
func TestSwitchyardPodOfANode(t *testing.T) {
	other := pod("other-app", "node-1", corev1.PodRunning, false)
	other.Labels = map[string]string{"app.kubernetes.io/name": "something-else"}
	client := fake.NewClientset(
		pod("sy-old", "node-1", corev1.PodRunning, true), pod("sy-new", "node-1", corev1.PodPending, false),
		pod("sy-2", "node-2", corev1.PodRunning, false), other, pod("sy-1", "node-1", corev1.PodRunning, false))
	p, err := switchyardPod(context.Background(), client, "", "node-1")
	if err != nil || p.Name != "sy-1" {
		t.Fatalf("got %v, %v; want sy-1", p, err)
	}
	if _, err := switchyardPod(context.Background(), client, "", "node-3"); err == nil || !strings.Contains(err.Error(), "node-3") {
		t.Fatalf("a node without switchyard: %v", err)
	}
}

// What runs in the pod: switchyard explain against its own metrics
// address, the query passed on as given.
func TestCommandInThePod(t *testing.T) {
	o := explainOptions{from: "10.244.1.9", to: "10.96.0.10:53/UDP", output: "json", metrics: "127.0.0.1:10249"}
	want := []string{"switchyard", "explain", "--running", "127.0.0.1:10249", "--from", "10.244.1.9", "--to", "10.96.0.10:53/UDP", "-o", "json"}
	if d := cmp.Diff(want, o.command()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	o.dataplane = "ovs"
	if d := cmp.Diff(append(want, "--dataplane", "ovs"), o.command()); d != "" {
		t.Errorf("with --dataplane (-want +got):\n%s", d)
	}
}

func TestMissingFlagsAreUsageErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Run(context.Background(), []string{"explain", "--node", "node-1", "--to", "10.96.0.10:80"}, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "--from") {
		t.Errorf("exit %d, %q; want 2 naming the missing flags", code, errOut.String())
	}
}
