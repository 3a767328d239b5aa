package main

import "fmt"

// apiScaleSizes are the sizes BenchmarkAPIServerAtScale runs, and
// besideSizes those it runs kube-proxy beside switchyard at.
var (
	apiScaleSizes = []int{1000, 10000, 30000, 100000}
	besideSizes   = []int{1000, 10000, 30000}
)

// scaleLimits are issue 32's targets at one size through a real API
// server.
type scaleLimits struct {
	n             int
	firstSyncS    float64 // process start to first sync done
	rssMiB        float64 // RSS at every sample
	writeP99Ms    float64 // write → traffic p99, min-sync-period 0
	label, labelN string  // "30k", "30k Services / 300k endpoints"
}

var apiScaleLimits = []scaleLimits{
	{30000, 6, 350, 20, "30k", "30k Services / 300k endpoints"},
	{100000, 20, 1024, 50, "100k", "100k Services / 1M endpoints"},
}

// apiScaleTargets are issue 32's targets at 30k and 100k through a real
// API server, and kube-proxy beside switchyard at 30k.
func apiScaleTargets(rs map[string]result) []target {
	var ts []target
	for _, l := range apiScaleLimits {
		ts = append(ts, l.targets(rs[size("e2e:BenchmarkAPIServerAtScale", l.n)])...)
	}
	api30k := rs[size("e2e:BenchmarkAPIServerAtScale", 30000)]
	return append(ts, target{"beside kube-proxy at 30k: switchyard ahead on first sync, write → traffic p99 and RSS (switchyard ÷ kube-proxy < 1 for each)",
		fmt.Sprintf("%s, %s, %s", fmtvOr(api30k, "sy/kp-start-to-synced"), fmtvOr(api30k, "sy/kp-write-to-traffic-p99"), fmtvOr(api30k, "sy/kp-rss-max")),
		verdictOn(api30k["sy/kp-start-to-synced"] < 1 && api30k["sy/kp-write-to-traffic-p99"] < 1 && api30k["sy/kp-rss-max"] < 1,
			[]string{"sy/kp-start-to-synced", "sy/kp-write-to-traffic-p99", "sy/kp-rss-max"}, api30k)})
}

// targets are the limits' rows for the size's result r.
func (l scaleLimits) targets(r result) []target {
	return []target{
		{fmt.Sprintf("%s through a real API server: process start to first sync done < %v s", l.labelN, l.firstSyncS),
			fmtvOr(r, "start-to-synced-s") + " s", verdictOn(r["start-to-synced-s"] < l.firstSyncS, []string{"start-to-synced-s"}, r)},
		{fmt.Sprintf("%s through a real API server: RSS < %v MiB at every sample", l.label, l.rssMiB),
			fmt.Sprintf("%s MiB highest of %s samples (%s)", fmtvOr(r, "rss-max-MiB"), fmtvOr(r, "rss-samples"), peakNote(r)), verdictOn(r["rss-max-MiB"] < l.rssMiB, []string{"rss-max-MiB"}, r)},
		{fmt.Sprintf("restart at %s through a real API server: no flow ever missing, none re-added", l.label),
			fmt.Sprintf("at most %s flows missing at any of %s samples; %s re-added", fmtvOr(r, "restart-flows-missing-max"), fmtvOr(r, "restart-flow-samples"), fmtvOr(r, "restart-flows-readded")),
			verdictOn(r["restart-flows-missing-max"] == 0 && r["restart-flows-readded"] == 0, []string{"restart-flows-missing-max", "restart-flows-readded"}, r)},
		{fmt.Sprintf("API write → traffic at %s, p99 < %v ms (min-sync-period 0, 1 000 changes)", l.label, l.writeP99Ms),
			fmtvOr(r, "write-to-traffic-p99-ms") + " ms", verdictOn(r["write-to-traffic-p99-ms"] < l.writeP99Ms, []string{"write-to-traffic-p99-ms"}, r)},
	}
}

// peakNote says the process's RSS high-water mark since start, which
// holds the first sync's peak: not a target, and not in older runs.
func peakNote(r result) string {
	if _, ok := r["rss-peak-since-start-MiB"]; !ok {
		return "the high-water mark since start not measured in these runs"
	}
	return fmt.Sprintf("the process's high-water mark since start, its first sync included, not a target: %s MiB", fmtv(r["rss-peak-since-start-MiB"]))
}
