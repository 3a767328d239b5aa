package hnsharness

import (
	"testing"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

func TestConformance(t *testing.T) {
	cases, err := conformance.Cases()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name, network string
		build         hnssim.Build
	}{
		{"hns-l2bridge", "L2Bridge", hnssim.Windows2022},
		{"hns-overlay", "Overlay", hnssim.Windows2025},
	} {
		t.Run(v.name, func(t *testing.T) {
			conformance.Run(t, Start(t, v.name, v.build, v.network), cases)
		})
	}
}
