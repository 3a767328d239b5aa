//go:build !windows

package instancelock

import (
	"os"

	"golang.org/x/sys/unix"
)

func tryLock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) }

func unlock(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_UN) }
