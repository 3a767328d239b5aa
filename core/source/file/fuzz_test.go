package file

import (
	"os"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the file parser: it must never panic,
// and every error must say where it is.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/mixed.yaml", "testdata/list.yaml"} { // small seeds keep mutations fast
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("---\n---\nkind: List\nitems: [{kind: List}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l := Parse("fuzz.yaml", data)
		for _, e := range l.Errors {
			if e.Index < 1 || e.Line < 1 || e.Err == nil || e.Error() == "" {
				t.Fatalf("error without a place: %+v", e)
			}
		}
		for _, s := range l.Services {
			if s.Name == "" || s.Namespace == "" {
				t.Fatalf("service without name or namespace: %+v", s.ObjectMeta)
			}
		}
	})
}
