package main

import (
	"fmt"
	"io"
)

// The large-Service benchmarks: one Service of 1k, 10k and 50k endpoints
// next to the 10k Services load (issue 27).

var largeSizes = []int{1000, 10_000, 50_000}

func largeKey(n int) string {
	return fmt.Sprintf("ovs:BenchmarkRealOVSLargeService/services=10000/large=%d", n)
}

func largeModelKey(n int, part string) string {
	return fmt.Sprintf("ovs:BenchmarkLargeServiceChange/large=%d/%s", n, part)
}

// writeLarge writes the large-Service table.
func writeLarge(w io.Writer, rs results) {
	fmt.Fprint(w, "### One large Service next to 10k Services (OVS, real, userspace datapath)\n\n"+
		"The synthetic 10k Services plus one ClusterIP Service of 1k, 10k or 50k endpoints in slices of 1 000 "+
		"(every tenth not ready), all on this node. Cold sync of it all; then changes of one of the large "+
		"Service's endpoints (readiness flips), each timed from the slice reaching the core until the datapath followed "+
		"(the core's rebuild of the Service, then the driver's whole Apply), with the parts beside it: first 1 000 changes, "+
		"each alone (20 ms idle before it, as a change that arrives alone); then 200 back to back, where each waits for "+
		"the revalidator round OVS runs at most every 5 ms (ovs/vswitchd/settle.go). `make bench` runs this three times; each "+
		"figure is the worst of the runs (the runs row). The last rows are the same change without OVS, in a cluster of "+
		"1k Services (`BenchmarkLargeServiceChange`): the driver's model and the core, each on its own.\n\n")
	fmt.Fprint(w, "| | 1k endpoints | 10k endpoints | 50k endpoints |\n|---|---|---|---|\n")
	rows := []struct {
		label, unit string
		scale       float64
		key         func(int) string
	}{
		{"runs", "runs", 1, largeKey},
		{"cold sync of the 10k Services and the large one, s", "cold-sync-s", 1, largeKey},
		{"endpoint buckets in OVS", "buckets-in-ovs", 1, largeKey},
		{"one change alone, slice to traffic, p50 ms", "change-p50-ms", 1, largeKey},
		{"one change alone, slice to traffic, p99 ms", "change-p99-ms", 1, largeKey},
		{"  the core's part, p50 ms", "core-p50-ms", 1, largeKey},
		{"  the core's part, p99 ms", "core-p99-ms", 1, largeKey},
		{"  the driver's whole Apply, p50 ms", "apply-p50-ms", 1, largeKey},
		{"  the driver's whole Apply, p99 ms", "apply-p99-ms", 1, largeKey},
		{"    of which its own work, p99 ms", "own-p99-ms", 1, largeKey},
		{"    of which in OVS, p50 ms", "in-ovs-p50-ms", 1, largeKey},
		{"    of which in OVS, p99 ms", "in-ovs-p99-ms", 1, largeKey},
		{"    of which the settle, p50 ms", "settle-p50-ms", 1, largeKey},
		{"    of which the settle, p99 ms", "settle-p99-ms", 1, largeKey},
		{"group-mods per change", "group-mods/change", 1, largeKey},
		{"flow-mods per change", "flow-mods/change", 1, largeKey},
		{"changes back to back, slice to traffic, p50 ms", "burst-change-p50-ms", 1, largeKey},
		{"changes back to back, slice to traffic, p99 ms", "burst-change-p99-ms", 1, largeKey},
		{"  of which in OVS, p99 ms", "burst-in-ovs-p99-ms", 1, largeKey},
		{"  of which the settle, p99 ms", "burst-settle-p99-ms", 1, largeKey},
		{"model only: driver, µs", "ns/op", 1e-3, func(n int) string { return largeModelKey(n, "driver") }},
		{"model only: driver, KiB allocated", "B/op", 1.0 / 1024, func(n int) string { return largeModelKey(n, "driver") }},
		{"model only: core, µs", "ns/op", 1e-3, func(n int) string { return largeModelKey(n, "core") }},
		{"model only: core, KiB allocated", "B/op", 1.0 / 1024, func(n int) string { return largeModelKey(n, "core") }},
	}
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |", r.label)
		for _, n := range largeSizes {
			v, ok := rs[r.key(n)][r.unit]
			if !ok {
				fmt.Fprint(w, " not run |")
				continue
			}
			fmt.Fprintf(w, " %s |", fmtv(v*r.scale))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// largeTargets are issue 27's targets.
func largeTargets(rs results) []target {
	var change, apply, burst, mods string
	changeOK, modsOK := true, true
	var ran []result
	for i, n := range largeSizes {
		r := rs[largeKey(n)]
		sep := ", "
		if i == 0 {
			sep = ""
		}
		change += sep + fmtvOr(r, "change-p99-ms")
		apply += sep + fmtvOr(r, "apply-p99-ms")
		burst += sep + fmtvOr(r, "burst-change-p99-ms")
		mods += sep + fmtvOr(r, "group-mods/change") + "/" + fmtvOr(r, "flow-mods/change")
		ran = append(ran, r)
		changeOK = changeOK && r["change-p99-ms"] < 10
		modsOK = modsOK && r["group-mods/change"] <= 2 && r["flow-mods/change"] == 0
	}
	big := rs[largeKey(50_000)]
	return []target{
		{"one endpoint change in a 1k/10k/50k-endpoint Service next to 10k Services: its leaf group and the group above it, no flow", "group-/flow-mods per change " + mods,
			verdict(modsOK, ran...)},
		{"that change < 10 ms p99 from the slice reaching the core until traffic follows", fmt.Sprintf("p99 %s ms (of which the driver's Apply: p99 %s ms); back to back, not a target: p99 %s ms", change, apply, burst),
			verdict(changeOK, ran...)},
		{"cold sync of the 10k Services plus one 50k-endpoint Service into a real OVS < 2 s", fmt.Sprintf("%s s, %s endpoint buckets", fmtvOr(big, "cold-sync-s"), fmtvOr(big, "buckets-in-ovs")),
			verdict(big["cold-sync-s"] < 2, big)},
	}
}
