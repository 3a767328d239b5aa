package app

import (
	"sync/atomic"

	"github.com/switchyard-proxy/switchyard/core/runner"
)

// rounds hands a driver's requests for a round (dataplanes.Env's
// RequestRound) to the runner, which is made after the driver. A request
// before the runner exists is dropped: the runner's first round is a full
// sync, which takes everything the driver heard.
type rounds struct{ runner atomic.Pointer[runner.Runner] }

func (x *rounds) request() {
	if r := x.runner.Load(); r != nil {
		r.Request()
	}
}
