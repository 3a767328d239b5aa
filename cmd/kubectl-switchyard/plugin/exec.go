package plugin

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// execIn runs command in the pod's switchyard container, as kubectl exec,
// its output to out and errOut.
func execIn(ctx context.Context, config *rest.Config, client kubernetes.Interface, pod *corev1.Pod, command []string, out, errOut io.Writer) error {
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: Container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(config, "POST", req.URL())
	if err != nil {
		return err
	}
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out, Stderr: errOut}); err != nil {
		return fmt.Errorf("running switchyard explain in %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
