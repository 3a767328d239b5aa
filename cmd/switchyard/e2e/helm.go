//go:build linux

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

const chartNamespace = "kube-system"

// kubeVersion is the API server version the chart is rendered for: the one
// hack/ensure-kube.sh builds.
const kubeVersion = "v1.36.4"

// helmBinary returns a helm built from the Go module proxy (once, by
// hack/ensure-helm.sh) unless SWITCHYARD_HELM names one.
func helmBinary(t testing.TB) string { return cached(t, "SWITCHYARD_HELM", "hack/ensure-helm.sh") }

// render runs helm template on the chart with --set values.
func render(helm string, sets ...string) (string, error) {
	args := []string{"template", "sy", filepath.Join(repoRoot, "charts/switchyard"), "--namespace", chartNamespace, "--kube-version", kubeVersion}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm template: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// objects splits a rendered manifest into objects.
func objects(t testing.TB, manifest string) []*unstructured.Unstructured {
	t.Helper()
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		err := d.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("rendered manifest: %v", err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// find returns the rendered objects of a kind.
func find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// applier creates objects through the API server, by their kind.
type applier struct {
	c      *cluster
	mapper meta.RESTMapper
}

func newApplier(t testing.TB, c *cluster) *applier {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{c: c, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// create creates obj (dryRun: server-side dry-run only).
func (a *applier) create(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) error {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
	if err != nil {
		if rm, ok := a.mapper.(meta.ResettableRESTMapper); ok {
			rm.Reset()
		}
		if m, err = a.mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version); err != nil {
			return err
		}
	}
	opts := metav1.CreateOptions{FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	r := a.c.Dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		_, err = r.Namespace(obj.GetNamespace()).Create(ctx, obj, opts)
	} else {
		_, err = r.Create(ctx, obj, opts)
	}
	return err
}

// installServiceMonitorCRD stands in for the Prometheus Operator's CRD so
// the chart's ServiceMonitor can be dry-run (schema-less: the API server
// checks the object's shape, not the operator's fields).
func installServiceMonitorCRD(t testing.TB, a *applier) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "servicemonitors.monitoring.coreos.com"},
		"spec": map[string]any{
			"group": "monitoring.coreos.com", "scope": "Namespaced",
			"names": map[string]any{"kind": "ServiceMonitor", "plural": "servicemonitors", "singular": "servicemonitor", "listKind": "ServiceMonitorList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	ctx := context.Background()
	if err := a.create(ctx, crd, false); err != nil {
		t.Fatalf("ServiceMonitor CRD: %v", err)
	}
	sm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
		"metadata": map[string]any{"name": "probe", "namespace": chartNamespace}, "spec": map[string]any{}}}
	if err := waitFor(30*time.Second, func() error { return a.create(ctx, sm, true) }); err != nil {
		t.Fatalf("ServiceMonitor CRD never served: %v", err)
	}
}
