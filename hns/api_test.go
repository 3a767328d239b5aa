package hns

import "testing"

func TestIsOverlayIgnoresCase(t *testing.T) {
	for typ, want := range map[string]bool{"Overlay": true, "overlay": true, "OVERLAY": true, "L2Bridge": false, "": false} {
		if got := (&Network{Type: typ}).IsOverlay(); got != want {
			t.Errorf("IsOverlay(%q) = %v, want %v", typ, got, want)
		}
	}
}
