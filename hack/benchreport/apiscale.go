package main

import "fmt"

// apiScaleSizes are the sizes BenchmarkAPIServerAtScale runs, and
// besideSizes those it runs kube-proxy beside switchyard at.
var (
	apiScaleSizes = []int{1000, 10000, 30000, 100000}
	besideSizes   = []int{1000, 10000, 30000}
)

// apiScaleTargets are issue 32's targets at 30k and 100k through a real
// API server.
func apiScaleTargets(rs map[string]result) []target {
	api10k := rs[size("e2e:BenchmarkAPIServerAtScale", 10000)]
	api30k := rs[size("e2e:BenchmarkAPIServerAtScale", 30000)]
	api100k := rs[size("e2e:BenchmarkAPIServerAtScale", 100000)]
	return []target{
		{"30k Services / 300k endpoints through a real API server: process start to first sync done < 6 s", fmtvOr(api30k, "start-to-synced-s") + " s",
			verdict(api30k["start-to-synced-s"] < 6, api30k)},
		{"30k through a real API server: RSS < 350 MiB at every sample", fmt.Sprintf("%s MiB highest of %s samples", fmtvOr(api30k, "rss-max-MiB"), fmtvOr(api30k, "rss-samples")),
			verdict(api30k["rss-max-MiB"] < 350, api30k)},
		{"restart at 30k through a real API server: no flow ever missing, none re-added", fmt.Sprintf("at most %s flows missing at any of %s samples; %s re-added",
			fmtvOr(api30k, "restart-flows-missing-max"), fmtvOr(api30k, "restart-flow-samples"), fmtvOr(api30k, "restart-flows-readded")),
			verdict(api30k["restart-flows-missing-max"] == 0 && api30k["restart-flows-readded"] == 0, api30k)},
		{"API write → traffic p99 < 20 ms at 10k and at 30k (min-sync-period 0, 300 changes)", fmt.Sprintf("%s ms at 10k, %s ms at 30k", fmtvOr(api10k, "write-to-traffic-p99-ms"), fmtvOr(api30k, "write-to-traffic-p99-ms")),
			verdict(api10k["write-to-traffic-p99-ms"] < 20 && api30k["write-to-traffic-p99-ms"] < 20, api10k, api30k)},
		{"beside kube-proxy at 30k: switchyard ahead on first sync, write → traffic p99 and RSS (switchyard ÷ kube-proxy < 1 for each)", fmt.Sprintf("%s, %s, %s",
			fmtvOr(api30k, "sy/kp-start-to-synced"), fmtvOr(api30k, "sy/kp-write-to-traffic-p99"), fmtvOr(api30k, "sy/kp-rss-max")),
			verdict(api30k["sy/kp-start-to-synced"] < 1 && api30k["sy/kp-write-to-traffic-p99"] < 1 && api30k["sy/kp-rss-max"] < 1, api30k)},
		{"100k Services / 1M endpoints through a real API server: process start to first sync done < 20 s", fmtvOr(api100k, "start-to-synced-s") + " s",
			verdict(api100k["start-to-synced-s"] < 20, api100k)},
		{"100k through a real API server: RSS < 1 GiB at every sample", fmt.Sprintf("%s MiB highest of %s samples", fmtvOr(api100k, "rss-max-MiB"), fmtvOr(api100k, "rss-samples")),
			verdict(api100k["rss-max-MiB"] < 1024, api100k)},
		{"restart at 100k through a real API server: no flow ever missing, none re-added", fmt.Sprintf("at most %s flows missing at any of %s samples; %s re-added",
			fmtvOr(api100k, "restart-flows-missing-max"), fmtvOr(api100k, "restart-flow-samples"), fmtvOr(api100k, "restart-flows-readded")),
			verdict(api100k["restart-flows-missing-max"] == 0 && api100k["restart-flows-readded"] == 0, api100k)},
		{"API write → traffic p99 < 50 ms at 100k (min-sync-period 0, 300 changes)", fmtvOr(api100k, "write-to-traffic-p99-ms") + " ms",
			verdict(api100k["write-to-traffic-p99-ms"] < 50, api100k)},
	}
}
