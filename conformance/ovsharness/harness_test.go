//go:build linux

package ovsharness

import (
	"testing"

	"github.com/switchyard-proxy/switchyard/conformance"
)

func TestConformanceRouted(t *testing.T) { run(t, false) }

func TestConformanceOverlay(t *testing.T) { run(t, true) }

func run(t *testing.T, overlay bool) {
	cases, err := conformance.Cases()
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, Start(t, overlay), cases)
}
