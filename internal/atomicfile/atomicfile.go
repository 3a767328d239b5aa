// Package atomicfile writes files that other programs read while they
// change (a CNI plugin binary and its configuration, the node file): a
// reader sees the old content or the new, never a part.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write writes r to path through a temporary file in the same directory
// (made if missing) renamed over path.
func Write(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
