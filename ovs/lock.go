package ovs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// bridgeLock keeps a second switchyard from programming the same bridge:
// two drivers would each delete the other's flows as foreign to their
// state and fight forever. The lock is an exclusive lock on a file in the
// OVS run directory (shared by every process that can reach the bridge
// on this host), released by the kernel when the holder exits, so a
// crashed switchyard never leaves a stale lock. The file names the
// holder's PID for the error message.
type bridgeLock struct{ f *os.File }

// errLocked is returned when another process holds the bridge.
var errLocked = errors.New("bridge locked")

func lockPath(runDir, bridge string) string {
	return filepath.Join(runDir, "switchyard-"+bridge+".lock")
}

func lockBridge(runDir, bridge string) (*bridgeLock, error) {
	path := lockPath(runDir, bridge)
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
		return nil, fmt.Errorf("another switchyard (pid %s) already programs bridge %s (it holds %s): %w; stop it first, or point this one at another bridge",
			who, bridge, path, errLocked)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &bridgeLock{f: f}, nil
}

// release gives the bridge up (the file stays: removing it would let a
// third process lock a new file while a second still waits on the old).
func (l *bridgeLock) release() {
	if l != nil && l.f != nil {
		unlock(l.f)
		l.f.Close()
		l.f = nil
	}
}
