package object

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestMessageTable: a message's table says which fields are read, with
// which wire type, and refuses a declaration it cannot hold.
func TestMessageTable(t *testing.T) {
	m := reads(nums(1, 63), nums(2))
	type read struct {
		Type protowire.Type
		Read bool
	}
	var got []read
	for _, n := range []protowire.Number{1, 2, 3, 63, 64, 0, -1} {
		typ, ok := m.wireType(n)
		got = append(got, read{typ, ok})
	}
	want := []read{{protowire.BytesType, true}, {protowire.VarintType, true}, {protowire.VarintType, false},
		{protowire.BytesType, true}, {0, false}, {protowire.VarintType, false}, {0, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wireType (-want +got):\n%s", diff)
	}
	for _, bad := range []func(){
		func() { reads(nums(64), nil) },
		func() { reads(nil, nums(0)) },
		func() { reads(nums(3), nums(3)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("a bad declaration did not panic")
				}
			}()
			bad()
		}()
	}
}
