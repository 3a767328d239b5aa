package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteReplacesWhole: the file is made (with its directory), replaced
// whole with its mode, and no temporary file is left beside it.
func TestWriteReplacesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "node.json")
	for _, content := range []string{"first\n", "second, longer\n", "3\n"} {
		if err := Write(path, strings.NewReader(content), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, %v; want 0640", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want only the file", len(entries))
	}
}
