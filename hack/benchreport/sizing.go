package main

import (
	"fmt"
	"io"
)

// sizingKey is the memory sizing benchmark's key.
const sizingKey = "ovs:BenchmarkMemorySizing/services=10000"

// writeSizing writes the memory per Service and per endpoint.
func writeSizing(w io.Writer, rs map[string]result) {
	r := rs[sizingKey]
	fmt.Fprint(w, "### Memory per Service and per endpoint\n\n"+
		"The live heap of the objects as a source keeps them, the tracker and its graph, and the OVS driver's model, with\n"+
		"everything committed (`BenchmarkMemorySizing`): the synthetic cluster at 10k Services with 1 and with 20 endpoints\n"+
		"each, fitted as a·Services + b·endpoints. The process's fixed share and the collector's headroom come on top\n"+
		"(docs/install.md turns these into a request per cluster size).\n\n"+
		"| | bytes |\n|---|---|\n")
	fmt.Fprintf(w, "| per Service (with one port) | %s |\n| per endpoint | %s |\n", fmtvOr(r, "B/service"), fmtvOr(r, "B/endpoint"))
	fmt.Fprintf(w, "| live heap, 10k Services × 1 endpoint, MiB | %s |\n| live heap, 10k Services × 20 endpoints, MiB | %s |\n\n",
		fmtvOr(r, "heap-1-endpoint-MiB"), fmtvOr(r, "heap-20-endpoints-MiB"))
}
