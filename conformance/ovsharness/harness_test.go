//go:build linux

package ovsharness

import (
	"testing"

	"github.com/switchyard-proxy/switchyard/conformance"
)

func TestConformance(t *testing.T) {
	cases, err := conformance.Cases()
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, Start(t), cases)
}
