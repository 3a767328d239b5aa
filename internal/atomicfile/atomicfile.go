// Package atomicfile writes files that other programs read while they
// change (a CNI plugin binary and its configuration, the node file, the
// IPAM store): a reader sees the old content or the new, never a part,
// and after a power cut the file is whole, old or new.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// Write writes r to path through a temporary file in the same directory
// (made if missing), flushed to disk, renamed over path; then the
// directory is flushed so that the rename itself survives a power cut.
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
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir flushes a directory's entries (a rename in it) to disk.
// Windows cannot open a directory for that; NTFS journals the rename.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
