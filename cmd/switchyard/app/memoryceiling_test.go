package app

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// cgroupTree writes files (path → content, "/proc/self/cgroup" among
// them) under a temporary root and returns the cgroup mount and the
// /proc/self/cgroup file.
func cgroupTree(t *testing.T, files map[string]string) (cgroupRoot, procSelfCgroup string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "sys/fs/cgroup"), filepath.Join(dir, "proc/self/cgroup")
}

func TestContainerMemoryCeiling(t *testing.T) {
	const mib = 1 << 20
	v2 := func(files map[string]string) map[string]string {
		files["sys/fs/cgroup/cgroup.controllers"] = "cpu memory pids\n"
		return files
	}
	for _, c := range []struct {
		name     string
		gomemlim string
		files    map[string]string
		want     int64 // 0: nothing set
	}{
		{"cgroup v2 in a cgroup namespace: the container's own limit", "", v2(map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "536870912\n",
		}), 512 * mib * 9 / 10},
		{"cgroup v2 without a limit", "", v2(map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "max\n",
		}), 0},
		{"cgroup v2 nested: the container's limit under the pod's", "", v2(map[string]string{
			"proc/self/cgroup":                                 "0::/kubepods.slice/pod1/ctr\n",
			"sys/fs/cgroup/kubepods.slice/memory.max":          "max\n",
			"sys/fs/cgroup/kubepods.slice/pod1/memory.max":     "1073741824\n",
			"sys/fs/cgroup/kubepods.slice/pod1/ctr/memory.max": "268435456\n",
		}), 256 * mib * 9 / 10},
		{"cgroup v2 nested: a parent's limit tighter than the process's", "", v2(map[string]string{
			"proc/self/cgroup":                                         "0::/system.slice/switchyard.service\n",
			"sys/fs/cgroup/system.slice/memory.max":                    "209715200\n",
			"sys/fs/cgroup/system.slice/switchyard.service/memory.max": "max\n",
		}), 200 * mib * 9 / 10},
		{"cgroup v1 without a namespace: the host's path is absent, the mount is the container's", "", map[string]string{
			"proc/self/cgroup":                           "5:cpu,cpuacct:/kubepods/pod1/ctr\n4:memory:/kubepods/pod1/ctr\n0::/kubepods/pod1/ctr\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "402653184\n",
		}, 384 * mib * 9 / 10},
		{"cgroup v1's no limit (the largest page-aligned int64)", "", map[string]string{
			"proc/self/cgroup":                           "4:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0},
		{"a hybrid host: the unified hierarchy has no memory controller, v1's has the limit", "", map[string]string{
			"proc/self/cgroup":                               "4:memory:/job\n0::/job\n",
			"sys/fs/cgroup/unified/job/cgroup.procs":         "1\n",
			"sys/fs/cgroup/memory/job/memory.limit_in_bytes": "104857600\n",
		}, 100 * mib * 9 / 10},
		{"GOMEMLIMIT set: the operator's choice", "600MiB", v2(map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "536870912\n",
		}), 0},
		{"GOMEMLIMIT=off: the operator's choice too", "off", v2(map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "536870912\n",
		}), 0},
		{"a malformed limit is no limit", "", v2(map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "512M\n",
		}), 0},
		{"no /proc/self/cgroup (not Linux)", "", map[string]string{
			"sys/fs/cgroup/memory.max": "536870912\n",
		}, 0},
		{"malformed /proc/self/cgroup lines are skipped", "", v2(map[string]string{
			"proc/self/cgroup":         "garbage\n\n0::/\n",
			"sys/fs/cgroup/memory.max": "536870912\n",
		}), 512 * mib * 9 / 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, self := cgroupTree(t, c.files)
			getenv := func(k string) string {
				if k == "GOMEMLIMIT" {
					return c.gomemlim
				}
				return ""
			}
			got, ok := containerMemoryCeiling(getenv, root, self)
			if want := c.want != 0; ok != want || got != c.want {
				t.Errorf("containerMemoryCeiling = %d, %v; want %d, %v", got, ok, c.want, want)
			}
		})
	}
}

// The container's limit is in force from limitToContainer on, bounds
// the limit followed after the first sync, and stop puts back the one
// before.
func TestMemoryPolicyLimitsToTheContainer(t *testing.T) {
	root, self := cgroupTree(t, map[string]string{
		"proc/self/cgroup":                 "0::/\n",
		"sys/fs/cgroup/cgroup.controllers": "memory\n",
		"sys/fs/cgroup/memory.max":         "1073741824\n",
	})
	before := debug.SetMemoryLimit(-1)
	m := &memoryPolicy{}
	limit, ok := m.limitToContainer(func(string) string { return "" }, root, self)
	if !ok || limit != 1<<30*9/10 {
		t.Fatalf("limitToContainer = %d, %v; want %d, true", limit, ok, 1<<30*9/10)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("runtime's limit %d, want the container's %d", got, limit)
	}
	m.start(debug.SetMemoryLimit(-1))
	if got := debug.SetMemoryLimit(-1); got > limit {
		t.Errorf("limit followed %d is above the container's %d", got, limit)
	}
	m.stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after stop the limit is %d, want %d as before", got, before)
	}
}
