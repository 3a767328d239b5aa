//go:build linux

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// corefile is kubeadm's, less forward and loop: no upstream resolver is
// reachable from the test's namespaces, so names outside the cluster
// domain get an answer of "refused" at once instead of a timeout.
const corefile = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    reload
    loadbalance
}
`

// deployClusterDNS runs CoreDNS as kubeadm does (the kube-dns Service at
// the kubelets' clusterDNS address, served by switchyard like any other)
// and waits until it answers through that Service from the node.
func deployClusterDNS(t testing.TB, n *realNode) {
	t.Helper()
	ctx := context.Background()
	api := n.API.Admin
	const ns, name = "kube-system", "coredns"
	labels := map[string]string{"k8s-app": "kube-dns"}
	mustCreate(t, func() error {
		_, err := api.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := api.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
			}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := api.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:coredns"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
		}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := api.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{"Corefile": corefile}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := api.AppsV1().Deployments(ns).Create(ctx, corednsDeployment(labels), metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := api.CoreV1().Services(ns).Create(ctx, &v1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Labels: labels},
			Spec: v1.ServiceSpec{Selector: labels, ClusterIP: clusterDNSIP, Ports: []v1.ServicePort{
				{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
			}}}, metav1.CreateOptions{})
		return err
	})
	if err := waitFor(3*time.Minute, func() error {
		out, err := n.Run("nslookup", "kubernetes.default.svc.cluster.local", clusterDNSIP)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}); err != nil {
		t.Fatalf("the cluster DNS never answered through its Service: %v", err)
	}
}

func corednsDeployment(labels map[string]string) *appsv1.Deployment {
	probe := func(path string, port int32) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)}},
			PeriodSeconds: 2}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					ServiceAccountName: "coredns",
					PriorityClassName:  "system-cluster-critical",
					DNSPolicy:          v1.DNSDefault,
					Containers: []v1.Container{{
						Name: "coredns", Image: corednsImage, ImagePullPolicy: v1.PullNever,
						Args: []string{"-conf", "/etc/coredns/Corefile"},
						Ports: []v1.ContainerPort{{Name: "dns", ContainerPort: 53, Protocol: v1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 53, Protocol: v1.ProtocolTCP}},
						VolumeMounts:   []v1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
						ReadinessProbe: probe("/ready", 8181),
						LivenessProbe:  probe("/health", 8080),
					}},
					Volumes: []v1.Volume{{Name: "config", VolumeSource: v1.VolumeSource{
						ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "coredns"}}}}},
				},
			},
		},
	}
}
