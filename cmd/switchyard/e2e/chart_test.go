//go:build linux

package e2e

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestChartRendersAndTheAPIServerAcceptsIt renders the chart for each
// dataplane setting with a real helm and has a real kube-apiserver accept
// every object with a server-side dry-run (strict field validation).
func TestChartRendersAndTheAPIServerAcceptsIt(t *testing.T) {
	helm := helmBinary(t)
	c := startCluster(t)
	a := newApplier(t, c)
	installServiceMonitorCRD(t, a)
	for _, tc := range []struct {
		name        string
		sets        []string
		linux, wind bool // which DaemonSets
		dataplane   string
		monitor     bool
		configHas   string // a line the Linux config must hold
	}{
		{"ovs (default)", nil, true, false, "ovs", false, ""},
		{"ovs with service CIDRs", []string{"ovs.serviceCIDRs={10.96.0.0/12,fd00:10:96::/108}"}, true, false, "ovs", false,
			`ovs-service-cidrs: ["10.96.0.0/12","fd00:10:96::/108"]`},
		{"hns on Windows nodes", []string{"dataplane=hns"}, false, true, "", false, ""},
		{"mixed cluster", []string{"windows.enabled=true"}, true, true, "ovs", false, ""},
		{"third-party driver", []string{"dataplane=file-export", "thirdParty.image.repository=example.com/switchyard-file-export"}, true, false, "file-export", false, ""},
		{"service monitor", []string{"serviceMonitor.enabled=true", "metrics.bindAddress=0.0.0.0"}, true, false, "ovs", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := render(helm, tc.sets...)
			if err != nil {
				t.Fatal(err)
			}
			objs := objects(t, out)
			var linux, windows *unstructured.Unstructured
			for _, ds := range find(objs, "DaemonSet") {
				sel, _, _ := unstructured.NestedStringMap(ds.Object, "spec", "template", "spec", "nodeSelector")
				switch sel["kubernetes.io/os"] {
				case "linux":
					linux = ds
				case "windows":
					windows = ds
				}
			}
			if (linux != nil) != tc.linux || (windows != nil) != tc.wind {
				t.Fatalf("DaemonSets: linux %v windows %v, want %v %v", linux != nil, windows != nil, tc.linux, tc.wind)
			}
			if linux != nil {
				checkPodSpec(t, linux, false)
				checkNodeNetwork(t, linux, tc.dataplane == "ovs")
				cm := find(objs, "ConfigMap")[0]
				cfg, _, _ := unstructured.NestedString(cm.Object, "data", "linux.yaml")
				if !strings.Contains(cfg, `dataplane: "`+tc.dataplane+`"`) {
					t.Errorf("linux config does not select %s:\n%s", tc.dataplane, cfg)
				}
				if !strings.Contains(cfg, "\n"+tc.configHas) {
					t.Errorf("linux config has no line %q:\n%s", tc.configHas, cfg)
				}
			}
			if windows != nil {
				checkPodSpec(t, windows, true)
			}
			if got := len(find(objs, "ServiceMonitor")) == 1; got != tc.monitor {
				t.Errorf("ServiceMonitor rendered: %v, want %v", got, tc.monitor)
			}
			checkRBAC(t, objs)
			for _, o := range objs {
				if err := a.create(context.Background(), o, true); err != nil {
					t.Errorf("API server refuses %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
		})
	}
}

// checkPodSpec checks what the issue asks of each DaemonSet's pods.
func checkPodSpec(t *testing.T, ds *unstructured.Unstructured, windows bool) {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(ds.Object, "spec", "template", "spec")
	if spec["hostNetwork"] != true {
		t.Errorf("%s: not hostNetwork", ds.GetName())
	}
	if spec["priorityClassName"] != "system-node-critical" {
		t.Errorf("%s: priorityClassName %v", ds.GetName(), spec["priorityClassName"])
	}
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	ctr := containers[0].(map[string]any)
	// Liveness and startup on /livez (served from the process's start: a
	// slow initial list is not a dead process), readiness on /readyz (the
	// first sync done). The startup budget covers at least the longest
	// switchyard itself waits for its lists (--informer-sync-timeout, 2m).
	live, _, _ := unstructured.NestedString(ctr, "livenessProbe", "httpGet", "path")
	ready, _, _ := unstructured.NestedString(ctr, "readinessProbe", "httpGet", "path")
	startup, _, _ := unstructured.NestedString(ctr, "startupProbe", "httpGet", "path")
	if live != "/livez" || ready != "/readyz" || startup != "/livez" {
		t.Errorf("%s: probes live %q ready %q startup %q, want /livez, /readyz, /livez", ds.GetName(), live, ready, startup)
	}
	number := func(path ...string) int64 { // YAML numbers decode as int64 or float64
		switch v, _, _ := unstructured.NestedFieldNoCopy(ctr, path...); x := v.(type) {
		case int64:
			return x
		case float64:
			return int64(x)
		}
		return 0
	}
	period, failures := number("startupProbe", "periodSeconds"), number("startupProbe", "failureThreshold")
	if budget := time.Duration(period*failures) * time.Second; budget < 2*time.Minute {
		t.Errorf("%s: the startup probe gives %v, less than --informer-sync-timeout's 2m", ds.GetName(), budget)
	}
	if windows {
		hp, _, _ := unstructured.NestedBool(spec, "securityContext", "windowsOptions", "hostProcess")
		if !hp {
			t.Errorf("%s: not a HostProcess pod", ds.GetName())
		}
		return
	}
	// ovs: privileged (the node's network), nothing else to set; a
	// third-party dataplane: NET_ADMIN under the default seccomp profile.
	// The CNI installer: no capability, the default seccomp profile.
	privileged, _, _ := unstructured.NestedBool(ctr, "securityContext", "privileged")
	caps, _, _ := unstructured.NestedStringSlice(ctr, "securityContext", "capabilities", "add")
	seccomp, _, _ := unstructured.NestedString(ctr, "securityContext", "seccompProfile", "type")
	inits, _, _ := unstructured.NestedSlice(spec, "initContainers")
	if ovs := len(inits) > 0; ovs {
		if !privileged || len(caps) != 0 || seccomp != "" {
			t.Errorf("%s: privileged %v, capabilities %v, seccomp %q; want privileged alone", ds.GetName(), privileged, caps, seccomp)
		}
		ic := inits[0].(map[string]any)
		drop, _, _ := unstructured.NestedStringSlice(ic, "securityContext", "capabilities", "drop")
		icSeccomp, _, _ := unstructured.NestedString(ic, "securityContext", "seccompProfile", "type")
		if !slices.Equal(drop, []string{"ALL"}) || icSeccomp != "RuntimeDefault" {
			t.Errorf("%s: install-cni drops %v, seccomp %q; want ALL and RuntimeDefault", ds.GetName(), drop, icSeccomp)
		}
	} else if privileged || !slices.Equal(caps, []string{"NET_ADMIN"}) || seccomp != "RuntimeDefault" {
		t.Errorf("%s: privileged %v, capabilities %v, seccomp %q; want NET_ADMIN alone under RuntimeDefault", ds.GetName(), privileged, caps, seccomp)
	}
}

// checkNodeNetwork: with the ovs dataplane switchyard is the pod network:
// an init container installs the CNI plugin into the host's CNI
// directories from the same config, and the main container is privileged
// (sysctls, routes, nftables) with the node file's directory from the
// host. A third-party dataplane gets neither.
func checkNodeNetwork(t *testing.T, ds *unstructured.Unstructured, ovs bool) {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(ds.Object, "spec", "template", "spec")
	inits, _, _ := unstructured.NestedSlice(spec, "initContainers")
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	privileged, _, _ := unstructured.NestedBool(containers[0].(map[string]any), "securityContext", "privileged")
	if !ovs {
		if len(inits) != 0 || privileged {
			t.Errorf("%s: a third-party dataplane got init containers %v or privileges", ds.GetName(), inits)
		}
		return
	}
	if !privileged {
		t.Errorf("%s: the ovs dataplane's container is not privileged", ds.GetName())
	}
	if len(inits) != 1 {
		t.Fatalf("%s: init containers %v, want install-cni", ds.GetName(), inits)
	}
	ic := inits[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(ic, "args")
	if len(args) < 2 || args[0] != "install" || args[1] != "--config=/etc/switchyard/linux.yaml" {
		t.Errorf("install-cni args %v", args)
	}
	mounts := func(c map[string]any) map[string]string {
		out := map[string]string{}
		ms, _, _ := unstructured.NestedSlice(c, "volumeMounts")
		for _, m := range ms {
			mm := m.(map[string]any)
			out[mm["name"].(string)] = mm["mountPath"].(string)
		}
		return out
	}
	hostPaths := map[string]string{}
	vols, _, _ := unstructured.NestedSlice(spec, "volumes")
	for _, v := range vols {
		if p, ok, _ := unstructured.NestedString(v.(map[string]any), "hostPath", "path"); ok {
			hostPaths[v.(map[string]any)["name"].(string)] = p
		}
	}
	// Host directories are mounted at their own paths, so the paths the
	// conflist and the node file name are the host's.
	for name, want := range map[string]string{"cni-bin": "/opt/cni/bin", "cni-conf": "/etc/cni/net.d"} {
		if got := mounts(ic)[name]; got != want || hostPaths[name] != want {
			t.Errorf("install-cni mounts %s at %q from host %q, want %q", name, got, hostPaths[name], want)
		}
	}
	for name, want := range map[string]string{"switchyard-run": "/var/run/switchyard", "cni-ipam": "/var/lib/cni/networks", "ovs-run": "/var/run/openvswitch"} {
		if got := mounts(containers[0].(map[string]any))[name]; got != want || hostPaths[name] != want {
			t.Errorf("switchyard mounts %s at %q from host %q, want %q", name, got, hostPaths[name], want)
		}
	}
}

// checkRBAC: read-only on what the proxy watches, events to write, its own
// DaemonSet by name (to tell an uninstall from a restart); nothing else.
func checkRBAC(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	roles := find(objs, "ClusterRole")
	if len(roles) != 1 || len(find(objs, "ClusterRoleBinding")) != 1 || len(find(objs, "ServiceAccount")) != 1 {
		t.Fatalf("want one ClusterRole, ClusterRoleBinding and ServiceAccount")
	}
	rules, _, _ := unstructured.NestedSlice(roles[0].Object, "rules")
	var got []string
	for _, r := range rules {
		m := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		res, _, _ := unstructured.NestedStringSlice(m, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
		names, _, _ := unstructured.NestedStringSlice(m, "resourceNames")
		slices.Sort(names)
		for _, g := range groups {
			for _, x := range res {
				got = append(got, g+"/"+x+":"+strings.Join(verbs, ",")+strings.Join(names, "+"))
			}
		}
	}
	slices.Sort(got)
	var daemonSets []string
	for _, ds := range find(objs, "DaemonSet") {
		daemonSets = append(daemonSets, ds.GetName())
	}
	slices.Sort(daemonSets)
	want := []string{"/events:create,patch,update", "/nodes:get,list,watch", "/services:get,list,watch",
		"apps/daemonsets:get" + strings.Join(daemonSets, "+"), "discovery.k8s.io/endpointslices:get,list,watch", "events.k8s.io/events:create,patch,update"}
	if !slices.Equal(got, want) {
		t.Errorf("ClusterRole grants %v\nwant               %v", got, want)
	}
	// The uninstall marker: one ConfigMap, by name, in the release's
	// namespace, and the pre-delete hook that creates it.
	roles = find(objs, "Role")
	if len(roles) != 1 || len(find(objs, "RoleBinding")) != 1 {
		t.Fatalf("want one Role and RoleBinding (the uninstall marker)")
	}
	rules, _, _ = unstructured.NestedSlice(roles[0].Object, "rules")
	var marker *unstructured.Unstructured
	for _, cm := range find(objs, "ConfigMap") {
		if cm.GetAnnotations()["helm.sh/hook"] == "pre-delete" {
			marker = cm
		}
	}
	if marker == nil {
		t.Fatal("no pre-delete hook ConfigMap (the uninstall marker)")
	}
	wantRules := []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"},
		"resourceNames": []any{marker.GetName()}, "verbs": []any{"get", "list", "watch"}}}
	if !reflect.DeepEqual(rules, wantRules) {
		t.Errorf("Role grants %v, want %v", rules, wantRules)
	}
}

// TestChartRefusesBadValues: values the chart cannot work with are refused
// by helm itself (values.schema.json or the templates), naming the value.
func TestChartRefusesBadValues(t *testing.T) {
	helm := helmBinary(t)
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"dataplane=Not_A_Driver"}, "dataplane"},
		{[]string{"metrics.port=0"}, "port"},
		{[]string{"health.port=70000"}, "port"},
		{[]string{"image.pullPolicy=Sometimes"}, "pullPolicy"},
		{[]string{"ovs.runDir=relative/path"}, "runDir"},
		{[]string{"config.dataplane=hns"}, "config"},
		{[]string{"serviceMonitor.interval=soon"}, "interval"},
		{[]string{"colour=blue"}, "colour"},
		{[]string{"dataplane=file-export"}, "thirdParty.image.repository"},
		{[]string{"serviceMonitor.enabled=true"}, "metrics.bindAddress"},
		{[]string{"windows.sourceVIP=not-an-ip"}, "sourceVIP"},
		{[]string{"kubeAPIServer=192.0.2.1:6443"}, "kubeAPIServer"},
		{[]string{"kubeAPIServer=http://192.0.2.1:8080"}, "kubeAPIServer"},
		{[]string{"ovs.encap=gre"}, "encap"},
		{[]string{"ovs.datapathType=dpdk"}, "datapathType"},
		{[]string{"ovs.cni.binDir=opt/cni/bin"}, "binDir"},
		{[]string{"ovs.extra.encap=none"}, "ovs.extra.encap"},
		{[]string{"ovs.serviceCIDRs={10.96.0.0}"}, "serviceCIDRs"},
		{[]string{"ovs.extra.service-cidrs=10.96.0.0/12"}, "ovs.extra.service-cidrs"},
		{[]string{"config.master=https://192.0.2.1:6443"}, "config.master"},
	} {
		t.Run(strings.Join(tc.set, ","), func(t *testing.T) {
			_, err := render(helm, tc.set...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}
