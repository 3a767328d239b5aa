// Command benchreport turns the output of `make bench` (go test -bench
// lines, with their pkg: headers) into docs/benchmarks.md: each figure at
// 1k and 10k Services side by side with the growth factor, the machine it
// ran on, and whether each target of the benchmark issue is met.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// result is one benchmark line: unit -> value.
type result map[string]float64

// results by "pkg-suffix:BenchmarkName/sub" without the -GOMAXPROCS suffix.
// A benchmark run several times (-count) keeps, for each unit, its worst
// value (every unit reported is worse when higher), and "runs" counts the
// runs: a target is met only when every run meets it (verdict).
type results map[string]result

// report is what parse read: each benchmark's worst values, and its best
// ones (the lowest of each unit), which say how far its runs spread and
// whether a figure a target wants unchanged stayed the same in every run.
type report struct {
	worst, best results
}

var lineRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// Output a benchmark logs while it runs (klog writes to stderr, which go
// test merges) lands after the name go test printed before running it:
// the name's line then holds that output (splitRE) and the result comes
// on a line of its own (bareRE), which takes the name.
var (
	splitRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(?:\D.*)?$`)
	bareRE  = regexp.MustCompile(`^\s+\d+\s+(\d.* ns/op.*)$`)
)

func parse(r io.Reader) report {
	out, best := results{}, results{}
	pkg, split := "", ""
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = p[strings.LastIndex(p, "/")+1:]
			continue
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			if sm := splitRE.FindStringSubmatch(line); sm != nil {
				split = sm[1]
			} else if bm := bareRE.FindStringSubmatch(line); bm != nil && split != "" {
				m, split = []string{line, split, bm[1]}, ""
			}
		}
		if m == nil {
			continue
		}
		res := result{}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err == nil {
				res[f[i+1]] = v
			}
		}
		key := pkg + ":" + m[1]
		low := maps.Clone(res)
		if prev, ok := out[key]; ok {
			for unit, v := range prev {
				res[unit] = max(res[unit], v)
			}
			for unit, v := range best[key] {
				if cur, ok := low[unit]; !ok || v < cur {
					low[unit] = v
				}
			}
		}
		res["runs"] = out[key]["runs"] + 1
		out[key], best[key] = res, low
	}
	return report{worst: out, best: best}
}

// row is one line of a table: a label and how to read it from a result.
type row struct {
	label string
	unit  string
	scale float64 // multiply the raw value (e.g. ns -> ms)
}

type table struct {
	title, about string
	key          func(n int) string // benchmark key for a size
	rows         []row
	sizes        []int // the sizes it has columns for (nil: 1k and 10k)
}

func fmtv(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func (t table) write(w io.Writer, rs results) {
	fmt.Fprintf(w, "### %s\n\n", t.title)
	if t.about != "" {
		fmt.Fprintf(w, "%s\n\n", t.about)
	}
	sizes := t.sizes
	if sizes == nil {
		sizes = []int{1000, 10000}
	}
	head, rule := "| |", "|---|"
	for _, n := range sizes {
		head += fmt.Sprintf(" %s Services / %s endpoints |", kilo(n), kilo(n*10))
		rule += "---|"
	}
	for i := 1; i < len(sizes); i++ {
		head += fmt.Sprintf(" %s ÷ %s |", kilo(sizes[i]), kilo(sizes[i-1]))
		rule += "---|"
	}
	fmt.Fprintf(w, "%s\n%s\n", head, rule)
	for _, r := range t.rows {
		line := "| " + r.label + " |"
		var vals []float64
		var oks []bool
		for _, n := range sizes {
			v, ok := rs[t.key(n)][r.unit]
			vals, oks = append(vals, v), append(oks, ok)
			if !ok {
				line += " not run |"
				continue
			}
			line += " " + fmtv(v*r.scale) + " |"
		}
		for i := 1; i < len(sizes); i++ {
			growth := ""
			if oks[i-1] && oks[i] && vals[i-1] != 0 {
				growth = fmt.Sprintf("%.1f×", vals[i]/vals[i-1])
			}
			line += " " + growth + " |"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
}

// kilo writes a size as the tables name it: 1k, 10k, 100k, 1M.
func kilo(n int) string {
	if n >= 1_000_000 && n%1_000_000 == 0 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	ovs, _ := exec.Command("ovs-vswitchd", "--version").Output()
	ovsLine, _, _ := strings.Cut(string(ovs), "\n")
	return fmt.Sprintf("%s, %d CPUs, Linux %s, %s, %s", cpu, runtime.NumCPU(), strings.TrimSpace(string(kernel)), runtime.Version(), strings.TrimSpace(ovsLine))
}

func main() {
	in := flag.String("in", "bin/bench.txt", "go test -bench output")
	out := flag.String("out", "docs/benchmarks.md", "Markdown report")
	apiserver := flag.String("kube-apiserver", "", "the kube-apiserver the e2e benchmarks ran against (its --version goes into the report)")
	flag.Parse()
	f, err := os.Open(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	rep := parse(f)
	f.Close()
	var b strings.Builder
	write(&b, rep, versionOf(*apiserver))
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	fmt.Print(b.String())
}

// target is one line of the targets table.
type target struct{ what, measured, verdict string }

// shown is the measured text as printed: "not run" alone when a result
// it reads is missing (not "not run s" or "not run MiB highest of …").
func (t target) shown() string {
	if t.verdict == "not run" {
		return "not run"
	}
	return t.measured
}

// fmtvOr formats a unit of a result, or says it did not run.
func fmtvOr(r result, unit string) string {
	v, ok := r[unit]
	if !ok {
		return "not run"
	}
	return fmtv(v)
}

func size(prefix string, n int) string {
	return fmt.Sprintf("%s/services=%d/endpoints=%d", prefix, n, n*10)
}

func write(w io.Writer, rep report, apiserver string) {
	rs := rep.worst
	fmt.Fprintf(w, "# Benchmarks\n\nWritten by `make bench` on %s.\n\nMachine: %s.\n\n", time.Now().UTC().Format("2006-01-02"), machine())
	fmt.Fprintf(w, "Synthetic clusters (`core/testobj.Synthetic`): 70%% ClusterIP, 20%% NodePort, 10%% LoadBalancer with\n"+
		"externalTrafficPolicy Local; 10 endpoints per Service over 10 nodes and 2 zones. Each figure is the worst\n"+
		"of its benchmark's runs; a target is met only when every one of at least %d runs met it. Raw lists each\n"+
		"benchmark's runs and, where they differed, each unit's best run: %s. The growth column is what to read.\n\n",
		runsNeeded, spreadSummary(rep))

	fmt.Fprintln(w, "## Results")
	fmt.Fprintln(w)
	for _, t := range resultTables(rs, apiserver) {
		t.write(w, rs)
	}
	writeLarge(w, rs)
	writeHNSChanges(w, rs)
	writeSizing(w, rs)
	ts := append(append(mainTargets(rep), apiScaleTargets(rs)...), largeTargets(rs)...)
	fmt.Fprint(w, "## Targets\n\n| target | measured | |\n|---|---|---|\n")
	for _, t := range ts {
		fmt.Fprintf(w, "| %s | %s | %s |\n", t.what, t.shown(), t.verdict)
	}
	fmt.Fprintln(w)
	writeRaw(w, rep)
}

// resultTables are the tables of results, each a benchmark over sizes.
func resultTables(rs map[string]result, apiserver string) []table {
	return []table{
		{"Core (`core/tracker`)", "Every object handed to a new tracker and the whole graph built; then one endpoint flipping readiness (delta + commit).",
			func(n int) string { return size("tracker:BenchmarkFullBuild", n) },
			[]row{{"full build, ms", "ns/op", 1e-6}, {"allocated per build, MiB", "B/op", 1.0 / (1 << 20)}, {"Go heap after the build (objects + graph), MiB", "heap-MiB", 1}, {"benchmark process RSS, MiB", "rss-MiB", 1}}, nil},
		{"Core: one endpoint change", "",
			func(n int) string { return size("tracker:BenchmarkOneEndpointChange", n) },
			[]row{{"delta + commit, µs", "ns/op", 1e-3}, {"allocated, KiB", "B/op", 1.0 / 1024}, {"allocations", "allocs/op", 1}}, nil},
		{"OVS driver on a real OVS (userspace datapath)", "Cold full sync until OVS confirmed the bundle and the datapath followed it (settle: a revalidator round, or a purge after a bundle of more than 1 024 messages); then 200 single endpoint changes back to back, each until OVS confirmed its bundle (in OVS) and a revalidator round that began after it had ended (settle; OVS starts rounds at least 5 ms apart); then a periodic resync, and a periodic audit with changes made until it had read the bridge.",
			func(n int) string { return size("ovs:BenchmarkRealOVS", n) },
			[]row{{"cold full sync, s", "cold-sync-s", 1}, {"  of which building the bundle until OVS confirmed it, s", "cold-in-ovs-s", 1}, {"  of which the settle (purge), s", "cold-settle-s", 1}, {"flows in OVS", "flows-in-ovs", 1},
				{"one change in OVS, p50 ms", "in-ovs-p50-ms", 1}, {"one change in OVS, p99 ms", "in-ovs-p99-ms", 1},
				{"settle (revalidator wait), p50 ms", "settle-p50-ms", 1}, {"settle (revalidator wait), p99 ms", "settle-p99-ms", 1},
				{"whole Apply, p50 ms", "apply-p50-ms", 1}, {"whole Apply, p99 ms", "apply-p99-ms", 1},
				{"flow-mods per change", "flow-mods/change", 1}, {"group-mods per change", "group-mods/change", 1},
				{"periodic full resync with nothing changed, ms", "resync-ms", 1}, {"flow- and group-mods in that resync", "resync-flow-mods", 1},
				{"periodic audit (off the driver's lock) with changes every 10 ms, s", "audit-s", 1}, {"  ovs-vswitchd CPU over it, s", "audit-vswitchd-cpu-s", 1},
				{"  a change's whole Apply during it, p50 ms", "apply-in-audit-p50-ms", 1}, {"  a change's whole Apply during it, p99 ms", "apply-in-audit-p99-ms", 1},
				{"ovs-vswitchd CPU during the cold sync, s", "cold-vswitchd-cpu-s", 1}, {"driver CPU during the cold sync (GC included), s", "cold-driver-cpu-s", 1}}, nil},
		{"File source: parsing the cluster file", "The synthetic cluster written as YAML documents (" + fmtvOr(rs["file:BenchmarkParse/services=10000"], "file-MB") + " MB at 10k), parsed and decoded (`core/source/file`, on every core).",
			func(n int) string { return fmt.Sprintf("file:BenchmarkParse/services=%d", n) },
			[]row{{"parse, s", "ns/op", 1e-9}, {"allocated, MiB", "B/op", 1.0 / (1 << 20)}}, nil},
		{"The switchyard process (file source, ovs driver, real OVS)", "The binary started with the synthetic cluster as `--file`; RSS and heap read 2 s after its first sync (the live heap after a forced GC).",
			func(n int) string { return size("e2e:BenchmarkSwitchyardProcess", n) },
			[]row{{"start to first sync done, s", "start-to-synced-s", 1}, {"RSS, MiB", "rss-MiB", 1}, {"Go heap, MiB", "heap-MiB", 1}, {"live Go heap, MiB", "live-heap-MiB", 1}}, nil},
		{"The switchyard process with the cluster file as JSON", "The same, the file holding the same objects as JSON documents (what `kubectl get -o json` prints is JSON too): decoded without YAML.",
			func(n int) string { return size("e2e:BenchmarkSwitchyardProcessJSON", n) },
			[]row{{"start to first sync done, s", "start-to-synced-s", 1}, {"RSS, MiB", "rss-MiB", 1}, {"live Go heap, MiB", "live-heap-MiB", 1}}, nil},
		{"Through a real kube-apiserver", "The switchyard binary with `--kubeconfig` against " + apiserver + " (emulating 1.33, its ClusterIPs from the bitmap allocator: v1.36's IPAddress allocator makes writing n Services O(n²); with WatchList on, as from 1.34, so that the informers stream their first state; docs/scale.md) holding the synthetic Services written as a cluster holds them (selectors, endpoints' target references, owner references, managed fields), a real OVS, `--sync-period=10s`; switchyard starts once kube-apiserver has digested the writes (under a tenth of a CPU over 2 s, at most 2 minutes: the wait is a row). The first sync's CPU rows say where its time went on this 2-core machine: each process's CPU seconds from switchyard's start to its first sync done. kube-apiserver's collections over the same span are counted from its metrics (go_gc_duration_seconds_count, read just before the start and just after the sync): one collection of its heap at 30k took 1.2-1.4 of its CPU-seconds (profiled), on the cores switchyard reads with, and whether one fell in the first sync made most of the spread between runs (docs/scale.md). Every 3 minutes kube-apiserver repairs its ClusterIP and NodePort allocators, each repair listing every Service through its loopback client (profiled: ~2 CPU-seconds at 30k, ~11 at 100k, on the same two cores); an audit log of those lists says how many ran during the first sync (or within 1 s after one ended: its garbage's collection) and how many changes were followed while one ran; the p99 of the others is shown beside the target's figure, which counts every change; switchyard's own periodic audits (every 10 s here, reading the bridge and syncing the host beside the changes) are logged at `--v=2` with when each began and how long it read, and are counted the same way, with the API server's part of the changes inside and outside them. A second client watches the probe's EndpointSlice beside switchyard: when each change's event reached it splits a change's time into the API server's part (the write, etcd, the watch) and the rest (switchyard, OVS, the probe's spacing); the percentiles of each part are over the changes, so they do not add up to the whole's. RSS sampled every second over ≥ 3 periodic full resyncs, 1 000 EndpointSlice changes and the probes (the highest sample is the figure); the high-water mark is the kernel's (VmHWM) at the end of those samples, over the process's whole life, its first sync included. Write → traffic: from an EndpointSlice update until the earliest connection that reached the new endpoint was started (connections overlap, one started every 2 ms, each ~10 ms itself), 1 000 changes 300 ms apart with `--min-sync-period=0` (over 5 minutes: the window of upstream's network programming latency SLI, and longer than the 3 minutes between kube-apiserver's repairs; until 2026-12-01 300 changes, whose p99 is shown beside), 30 with the default 1 s; the periodic resync's read-back is the audit's, off the change path (docs/scale.md). Restart: the process stopped and started again; OVS's flow count sampled every 100 ms until 1 s after the new process's first sync.",
			func(n int) string { return size("e2e:BenchmarkAPIServerAtScale", n) },
			[]row{{"kube-apiserver settling before the start, s", "apiserver-settle-s", 1}, {"start to first sync done, s", "start-to-synced-s", 1},
				{"first sync: CPU of switchyard, s", "first-sync-cpu-switchyard-s", 1}, {"first sync: CPU of ovs-vswitchd, s", "first-sync-cpu-vswitchd-s", 1}, {"first sync: CPU of kube-apiserver, s", "first-sync-cpu-apiserver-s", 1},
				{"first sync: kube-apiserver's repair lists during it", "first-sync-apiserver-repairs", 1},
				{"first sync: kube-apiserver's collections during it", "first-sync-apiserver-collections", 1},
				{"first sync: reading the initial state (the API server's stream, decoded and converted), s", "first-sync-source-s", 1}, {"first sync: the driver's first full sync, s", "first-sync-driver-s", 1},
				{"first sync: what switchyard allocated from its start, MiB", "first-sync-allocated-MiB", 1}, {"first sync: switchyard's collections", "first-sync-gc-cycles", 1},
				{"flows in OVS", "flows-in-ovs", 1},
				{"RSS, highest sample, MiB", "rss-max-MiB", 1}, {"RSS, last sample, MiB", "rss-last-MiB", 1},
				{"RSS, high-water mark since start (the first sync's peak included), MiB", "rss-peak-since-start-MiB", 1}, {"Go heap at the end, MiB", "heap-MiB", 1},
				{"switchyard's collections while following the changes", "gc-cycles-following", 1},
				{"write → traffic, min-sync-period 0, p50 ms", "write-to-traffic-p50-ms", 1}, {"write → traffic, min-sync-period 0, p99 ms", "write-to-traffic-p99-ms", 1},
				{"  p99 of the first 300 changes (the window until 2026-12-01), ms", "write-to-traffic-first-300-p99-ms", 1},
				{"  changes followed during a kube-apiserver repair list", "write-to-traffic-in-repair", 1}, {"  p99 of the others (not the target's figure), ms", "write-to-traffic-outside-repair-p99-ms", 1},
				{"  changes followed during one of switchyard's audits", "write-to-traffic-in-audit", 1}, {"  p99 of those, ms", "write-to-traffic-in-audit-p99-ms", 1},
				{"  p99 of the others, ms", "write-to-traffic-outside-audit-p99-ms", 1},
				{"  write → a second watcher's event during an audit, p99 ms", "write-to-watch-in-audit-p99-ms", 1}, {"  … outside the audits, p99 ms", "write-to-watch-outside-audit-p99-ms", 1},
				{"  p99 of the changes outside both, ms", "write-to-traffic-outside-audit-and-repair-p99-ms", 1},
				{"  write → a second watcher's event, p50 ms", "write-to-watch-p50-ms", 1}, {"  write → a second watcher's event, p99 ms", "write-to-watch-p99-ms", 1},
				{"  that event → traffic, p50 ms", "watch-to-traffic-p50-ms", 1}, {"  that event → traffic, p99 ms", "watch-to-traffic-p99-ms", 1},
				{"write → traffic, min-sync-period 1 s, p50 ms", "write-to-traffic-default-p50-ms", 1}, {"write → traffic, min-sync-period 1 s, p99 ms", "write-to-traffic-default-p99-ms", 1},
				{"restart: stop to the new process's first sync, s", "restart-to-synced-s", 1},
				{"restart: most flows missing from OVS at any sample", "restart-flows-missing-max", 1}, {"restart: flows the new process re-added", "restart-flows-readded", 1}},
			apiScaleSizes},
		{"Beside upstream kube-proxy v1.36 (nftables mode), in the same run", "Upstream kube-proxy built from the Go module proxy (hack/ensure-node.sh kube-proxy), started after switchyard's first sync against the same API server, for the same node, in a network namespace of its own, with `syncPeriod: 10s` and `minSyncPeriod: 1ms` (its configuration file takes 0 as unset, 1 s). First sync: process start to kubeproxy_sync_proxy_rules_last_timestamp_seconds set, each while the other idled. Burst: 1 000 EndpointSlice changes written at once, until each proxy had observed them all in network_programming_duration_seconds with nothing pending. Then moves of the probe Service's endpoint (30 at 10k and below, 10 at 30k, where each waits for kube-proxy's full syncs: its p99 there is the highest of 10); after each, a real connection started every 2 ms through each one's dataplane at once (kube-proxy's: output DNAT in its namespace). network_programming_duration_seconds is each one's own histogram over the burst and the moves, read as the bucket holding the percentile (kube-proxy's finest bucket is 250 ms, so its figure is a bound). Ratios are switchyard ÷ kube-proxy: below 1 switchyard is faster or smaller.",
			func(n int) string { return size("e2e:BenchmarkAPIServerAtScale", n) },
			[]row{{"switchyard: start to first sync done, s", "start-to-synced-s", 1}, {"kube-proxy: start to first sync done, s", "kube-proxy-start-to-synced-s", 1}, {"first sync, switchyard ÷ kube-proxy", "sy/kp-start-to-synced", 1},
				{"switchyard: burst of 1 000 changes programmed, s", "beside-switchyard-burst-programmed-s", 1}, {"kube-proxy: burst of 1 000 changes programmed, s", "beside-kube-proxy-burst-programmed-s", 1},
				{"switchyard: write → traffic p50 ms", "beside-switchyard-write-to-traffic-p50-ms", 1}, {"switchyard: write → traffic p99 ms", "beside-switchyard-write-to-traffic-p99-ms", 1},
				{"kube-proxy: write → traffic p50 ms", "beside-kube-proxy-write-to-traffic-p50-ms", 1}, {"kube-proxy: write → traffic p99 ms", "beside-kube-proxy-write-to-traffic-p99-ms", 1},
				{"write → traffic p99, switchyard ÷ kube-proxy", "sy/kp-write-to-traffic-p99", 1},
				{"switchyard: network programming p50 ≤ ms", "beside-switchyard-netprog-p50-le-ms", 1}, {"switchyard: network programming p99 ≤ ms", "beside-switchyard-netprog-p99-le-ms", 1},
				{"kube-proxy: network programming p50 ≤ ms", "beside-kube-proxy-netprog-p50-le-ms", 1}, {"kube-proxy: network programming p99 ≤ ms", "beside-kube-proxy-netprog-p99-le-ms", 1},
				{"switchyard: syncs, mean ms", "beside-switchyard-sync-mean-ms", 1}, {"kube-proxy: syncs, mean ms", "beside-kube-proxy-sync-mean-ms", 1},
				{"switchyard: RSS, highest sample, MiB", "beside-switchyard-rss-max-MiB", 1}, {"kube-proxy: RSS, highest sample, MiB", "beside-kube-proxy-rss-max-MiB", 1}, {"RSS, switchyard ÷ kube-proxy", "sy/kp-rss-max", 1}},
			besideSizes},
		{"HNS driver against the simulator (Windows Server 2025)", "Not Windows: the driver's own work and its HNS calls, against the in-memory simulator.",
			func(n int) string { return fmt.Sprintf("hns:BenchmarkFullSync/windows=26100/services=%d", n) },
			[]row{{"cold sync, ms", "cold-sync-ms", 1}, {"HNS calls in the cold sync", "cold-hns-calls", 1}, {"resync with nothing changed, ms", "resync-ms", 1}, {"changing HNS calls in that resync", "resync-changing-calls", 1}}, nil},
	}
}

// hnsChange is the HNS single-change benchmark of a Windows build and size.
func hnsChange(rs map[string]result, build, n int) result { return rs[hnsChangeKey(build, n)] }

// writeHNSChanges writes the HNS calls per single-endpoint change.
func writeHNSChanges(w io.Writer, rs map[string]result) {
	fmt.Fprint(w, "### HNS calls per single-endpoint change (a remote endpoint of a ClusterIP Service)\n\n| build | 1k: LB update / LB create+delete / endpoint create+delete | 10k: same | driver's own time 1k / 10k, µs (less the simulator's) |\n|---|---|---|---|\n")
	for _, build := range []int{26100, 20348} {
		a, b := hnsChange(rs, build, 1000), hnsChange(rs, build, 10000)
		fmt.Fprintf(w, "| %d | %s / %s / %s | %s / %s / %s | %s / %s |\n", build,
			fmtvOr(a, "lb-updates/op"), fmtvOr(a, "lb-create+delete/op"), fmtvOr(a, "ep-create+delete/op"),
			fmtvOr(b, "lb-updates/op"), fmtvOr(b, "lb-create+delete/op"), fmtvOr(b, "ep-create+delete/op"),
			fmtvOr(a, "driver-µs/op"), fmtvOr(b, "driver-µs/op"))
	}
	fmt.Fprintln(w)
}

// mainTargets are the targets of the tables above (largeTargets has the
// large Service's).
func mainTargets(rep report) []target {
	rs := rep.worst
	real10k := rs[size("ovs:BenchmarkRealOVS", 10000)]
	real1k := rs[size("ovs:BenchmarkRealOVS", 1000)]
	proc10k := rs[size("e2e:BenchmarkSwitchyardProcess", 10000)]
	api10k := rs[size("e2e:BenchmarkAPIServerAtScale", 10000)]
	real30k := rs[size("ovs:BenchmarkRealOVS", 30000)]
	perK := func(r result, n float64) string {
		if len(r) == 0 {
			return "not run"
		}
		return fmtv(r["flows-in-ovs"] / n)
	}
	h25a, h25b := hnsChange(rs, 26100, 1000), hnsChange(rs, 26100, 10000)
	return []target{
		{"one endpoint change at 10k reaches OVS < 50 ms p99", fmt.Sprintf("%s ms p99 in OVS (%s ms p99 with the settle)", fmtvOr(real10k, "in-ovs-p99-ms"), fmtvOr(real10k, "apply-p99-ms")),
			verdict(real10k["in-ovs-p99-ms"] < 50, real10k)},
		{"flow-mods per change do not grow with the cluster", fmt.Sprintf("%s at 1k, %s at 10k (+ %s / %s group-mods)", fmtvOr(real1k, "flow-mods/change"), fmtvOr(real10k, "flow-mods/change"), fmtvOr(real1k, "group-mods/change"), fmtvOr(real10k, "group-mods/change")),
			verdict(rep.same([]string{"flow-mods/change", "group-mods/change"}, size("ovs:BenchmarkRealOVS", 1000), size("ovs:BenchmarkRealOVS", 10000)), real1k, real10k)},
		{"HNS calls per change do not grow; ≤ 1 with in-place modify", fmt.Sprintf("WS2025: %s LB update at 1k and %s at 10k, plus %s / %s remote-endpoint create/delete",
			fmtvOr(h25a, "lb-updates/op"), fmtvOr(h25b, "lb-updates/op"), fmtvOr(h25a, "ep-create+delete/op"), fmtvOr(h25b, "ep-create+delete/op")),
			verdict(rep.same([]string{"lb-updates/op"}, hnsChangeKey(26100, 1000), hnsChangeKey(26100, 10000)) && h25b["lb-updates/op"] <= 1 && h25b["lb-create+delete/op"] == 0, h25a, h25b) + " for load-balancer calls (the remote endpoint object's own create/delete is one more HNS call)"},
		{"cold full sync of 10k Services / 100k endpoints into a real OVS, until OVS confirmed it, < 2 s", fmt.Sprintf("%s s (%s s of it from building the bundle until OVS confirmed it, %s s the settle; CPU: driver %s s, ovs-vswitchd %s s)",
			fmtvOr(real10k, "cold-sync-s"), fmtvOr(real10k, "cold-in-ovs-s"), fmtvOr(real10k, "cold-settle-s"), fmtvOr(real10k, "cold-driver-cpu-s"), fmtvOr(real10k, "cold-vswitchd-cpu-s")),
			verdict(real10k["cold-sync-s"] < 2, real10k)},
		{"process start (file source) to first sync done at 10k < 4 s", fmt.Sprintf("%s s with a YAML file (%s s with the same objects as JSON)", fmtvOr(proc10k, "start-to-synced-s"), fmtvOr(rs[size("e2e:BenchmarkSwitchyardProcessJSON", 10000)], "start-to-synced-s")),
			verdict(proc10k["start-to-synced-s"] < 4, proc10k)},
		{"switchyard RSS < 150 MiB at 10k Services / 100k endpoints through a real API server, at every sample", fmt.Sprintf("%s MiB highest of %s samples (file source: %s MiB RSS, live heap %s MiB)",
			fmtvOr(api10k, "rss-max-MiB"), fmtvOr(api10k, "rss-samples"), fmtvOr(proc10k, "rss-MiB"), fmtvOr(proc10k, "live-heap-MiB")),
			verdict(api10k["rss-max-MiB"] < 150, api10k)},
		{"restart at 10k through a real API server: the flows in OVS never drop below the full set; no flow re-added", fmt.Sprintf("at most %s flows missing at any of %s samples; %s re-added",
			fmtvOr(api10k, "restart-flows-missing-max"), fmtvOr(api10k, "restart-flow-samples"), fmtvOr(api10k, "restart-flows-readded")),
			verdict(api10k["restart-flows-missing-max"] == 0 && api10k["restart-flows-readded"] == 0, api10k)},
		{"OVS flows O(frontends): flows per 1k Services the same at every size", fmt.Sprintf("%s at 1k, %s at 10k, %s at 30k", perK(real1k, 1), perK(real10k, 10), perK(real30k, 30)),
			verdict(real1k["flows-in-ovs"]*10 >= real10k["flows-in-ovs"], real1k, real10k)},
		{"one endpoint change: 1 group-mod, no flow-mod, < 10 ms p99 until traffic follows (whole Apply, the settle included)", fmt.Sprintf("p99 %s ms at 1k, %s ms at 10k, %s ms at 30k; %s group-mods and %s flow-mods per change at 10k",
			fmtvOr(real1k, "apply-p99-ms"), fmtvOr(real10k, "apply-p99-ms"), fmtvOr(real30k, "apply-p99-ms"), fmtvOr(real10k, "group-mods/change"), fmtvOr(real10k, "flow-mods/change")),
			verdict(real1k["apply-p99-ms"] < 10 && real10k["apply-p99-ms"] < 10 && real30k["apply-p99-ms"] < 10 && real10k["flow-mods/change"] == 0 && real10k["group-mods/change"] == 1, real1k, real10k, real30k)},
		{"API write → traffic at 10k, p99 < 20 ms with --min-sync-period 0, over 1 000 changes and the periodic resyncs", fmt.Sprintf("p50 %s ms, p99 %s ms", fmtvOr(api10k, "write-to-traffic-p50-ms"), fmtvOr(api10k, "write-to-traffic-p99-ms")),
			verdict(api10k["write-to-traffic-p99-ms"] < 20, api10k)},
		{"API write → traffic at 10k, p99 < 1.1 s with the default --min-sync-period 1 s", fmt.Sprintf("p50 %s ms, p99 %s ms", fmtvOr(api10k, "write-to-traffic-default-p50-ms"), fmtvOr(api10k, "write-to-traffic-default-p99-ms")),
			verdict(api10k["write-to-traffic-default-p99-ms"] < 1100, api10k)},
	}
}

// writeRaw lists every benchmark's figures, and each unit's best run
// where the runs differed.
func writeRaw(w io.Writer, rep report) {
	rs := rep.worst
	keys := make([]string, 0, len(rs))
	for k := range rs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprint(w, "## Raw\n\n```\n")
	for _, k := range keys {
		units := make([]string, 0, len(rs[k]))
		for u := range rs[k] {
			units = append(units, u)
		}
		sort.Strings(units)
		var parts []string
		for _, u := range units {
			part := fmt.Sprintf("%s %s", fmtv(rs[k][u]), u)
			if b, ok := rep.best[k][u]; ok && b != rs[k][u] && u != "runs" {
				part += fmt.Sprintf(" (best run %s)", fmtv(b))
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(w, "%s: %s\n", k, strings.Join(parts, ", "))
	}
	fmt.Fprint(w, "```\n")
}
