//go:build linux

package e2e

import (
	"fmt"
	"regexp"
	"time"
)

// A first sync's time, split by switchyard's own log at --v=2: reading the
// initial state (the API server's stream, decoded, converted and handed to
// the tracker; cmd/switchyard/app logs it once read) and the driver's
// first full sync (ovs/syncphases.go). The rest is the tracker's graph,
// the process's start and the steps between.

var (
	initialStateLine = regexp.MustCompile(`"Read the initial state" elapsed="([^"]+)"`)
	fullSyncLine     = regexp.MustCompile(`"Full sync's parts" elapsed="([^"]+)"`)
)

// firstSyncPhases reads the first of each line from a switchyard log.
func firstSyncPhases(log string) (source, driver time.Duration, err error) {
	lines := []*regexp.Regexp{initialStateLine, fullSyncLine}
	var got [2]time.Duration
	var seen [2]bool
	err = eachLine(log, func(line []byte) error {
		for i, re := range lines {
			m := re.FindSubmatch(line)
			if m == nil || seen[i] {
				continue
			}
			d, err := time.ParseDuration(string(m[1]))
			if err != nil {
				return fmt.Errorf("%s: %q: %v", log, line, err)
			}
			got[i], seen[i] = d, true
		}
		return nil
	})
	if err == nil && !(seen[0] && seen[1]) {
		err = fmt.Errorf("%s: no line for the initial state's reading or the first full sync (--v=2?)", log)
	}
	return got[0], got[1], err
}
