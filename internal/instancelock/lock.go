// Package instancelock keeps a second switchyard from programming what
// one already programs (an OVS bridge, a node's HNS): two would each
// remove the other's state as foreign and fight forever. The lock is an
// exclusive lock on a file, released by the kernel when the holder exits,
// so a crashed switchyard never leaves a stale lock. The file names the
// holder's PID for the error message.
package instancelock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Lock is a held instance lock.
type Lock struct{ f *os.File }

// ErrLocked is returned when another process holds the lock.
var ErrLocked = errors.New("locked by another switchyard")

// Acquire takes the lock at path (made, with its directory, if missing)
// for what (as the error names it), or says which process holds it.
func Acquire(path, what string) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	if err := tryLock(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "unknown"
		}
		return nil, fmt.Errorf("another switchyard (pid %s) already programs %s (it holds %s): %w; stop it first",
			who, what, path, ErrLocked)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release gives the lock up (the file stays: removing it would let a third
// process lock a new file while a second still waits on the old).
func (l *Lock) Release() {
	if l != nil && l.f != nil {
		unlock(l.f)
		l.f.Close()
		l.f = nil
	}
}
