package file

import (
	"fmt"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/testobj"
	"sigs.k8s.io/yaml"
)

// BenchmarkParse reads a synthetic cluster written as YAML documents, as
// the process benchmark's --file is.
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		data := syntheticYAML(b, n)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				l := Parse("cluster.yaml", data)
				if len(l.Errors) > 0 || len(l.Services) != n {
					b.Fatalf("%d services, errors %v", len(l.Services), l.Errors)
				}
			}
			b.ReportMetric(float64(len(data))/1e6, "file-MB")
		})
	}
}

func syntheticYAML(b *testing.B, n int) []byte {
	data, err := testobj.Synthetic(n, 10).File(yaml.Marshal)
	if err != nil {
		b.Fatal(err)
	}
	return data
}
