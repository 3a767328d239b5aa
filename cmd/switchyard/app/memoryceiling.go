package app

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// containerLimitShare is the part of the container's memory limit the Go
// runtime is asked to stay under when no GOMEMLIMIT is set: the rest is
// for what the limit counts that is not the runtime's (the binary's pages,
// the kernel's for the process, a thread's stack outside Go), as
// automemlimit's default does.
const containerLimitShare = 0.9

// containerMemoryCeiling is the soft memory limit the Go runtime starts
// with: containerLimitShare of the tightest memory limit of the cgroups
// the process is in, when there is one and GOMEMLIMIT is unset (any value
// counts as set, "off" too: the operator chose). Without it the runtime does not know the
// container's limit and collects only by GOGC's pacing, so the initial
// lists, which hold the most, could meet an OOM kill that collecting
// sooner would have avoided. ok is false when nothing is to be set.
func containerMemoryCeiling(getenv func(string) string, cgroupRoot, procSelfCgroup string) (limit int64, ok bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	f, err := os.Open(procSelfCgroup)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	limitBytes, ok := tightestCgroupMemoryLimit(cgroupRoot, bufio.NewScanner(f))
	if !ok {
		return 0, false
	}
	return int64(float64(limitBytes) * containerLimitShare), true
}

// tightestCgroupMemoryLimit reads /proc/self/cgroup's lines and returns the
// lowest memory limit set on the process's cgroup or any of its parents:
// cgroup v2's memory.max on the unified hierarchy ("0::/path"), or v1's
// memory.limit_in_bytes on the memory controller's ("N:...memory...:/path").
// Each directory from the path up to the hierarchy's mount is read where it
// exists: in a container without a cgroup namespace the path is the
// host's, and the mount holds the container's own cgroup at its root.
func tightestCgroupMemoryLimit(root string, lines *bufio.Scanner) (uint64, bool) {
	var best uint64
	found := false
	for lines.Scan() {
		dir, file, ok := memoryCgroupOf(root, lines.Text())
		if !ok {
			continue
		}
		for p := path.Clean("/" + cgroupPath(lines.Text())); ; p = path.Dir(p) {
			if v, ok := readCgroupLimit(filepath.Join(dir, filepath.FromSlash(p), file)); ok && (!found || v < best) {
				best, found = v, true
			}
			if p == "/" {
				break
			}
		}
	}
	return best, found
}

// memoryCgroupOf says, for one /proc/self/cgroup line, where its hierarchy
// is mounted under root and which file holds a memory limit there.
func memoryCgroupOf(root, line string) (dir, file string, ok bool) {
	fields := strings.SplitN(line, ":", 3)
	if len(fields) != 3 {
		return "", "", false
	}
	if fields[0] == "0" && fields[1] == "" {
		if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
			return root, "memory.max", true
		}
		// A hybrid host: the unified hierarchy beside v1's.
		return filepath.Join(root, "unified"), "memory.max", true
	}
	for _, c := range strings.Split(fields[1], ",") {
		if c == "memory" {
			return filepath.Join(root, "memory"), "memory.limit_in_bytes", true
		}
	}
	return "", "", false
}

// cgroupPath is a /proc/self/cgroup line's path.
func cgroupPath(line string) string {
	fields := strings.SplitN(line, ":", 3)
	return fields[len(fields)-1]
}

// noCgroupV1Limit: cgroup v1 writes "no limit" as the largest page-aligned
// int64 (9223372036854771712); anything from here up is no limit.
const noCgroupV1Limit = 1 << 62

// readCgroupLimit reads one limit file: a byte count, or "max" (v2's no
// limit). ok is false for no limit, a missing file or a malformed one.
func readCgroupLimit(file string) (uint64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v == 0 || v >= noCgroupV1Limit {
		return 0, false
	}
	return v, true
}
