package ovs

import (
	"time"

	"k8s.io/klog/v2"
)

// syncPhases times the parts of one full sync, for the --v=2 log: where
// a slow one (a cold start with 100k Services) spends its wall time.
// The bridge's parts run one after another; the host's runs beside them.
type syncPhases struct {
	model    time.Duration // the model brought to the snapshot
	readBack time.Duration // the bridge's flows and groups read back
	build    time.Duration // the bundles' messages worked out
	send     time.Duration // the messages written, until the commit request
	commit   time.Duration // from the commit request to the switch's reply
	settle   time.Duration // the datapath following the commits
	host     time.Duration // the host's routes and nftables
	bundles  int
	messages int

	mark    time.Time // when the bundle being timed began its part
	sending bool      // its messages are being written
}

// log says where a full sync's time went, total its whole.
func (p *syncPhases) log(total time.Duration) {
	klog.V(2).InfoS("Full sync's parts", "elapsed", total, "model", p.model, "readBack", p.readBack,
		"build", p.build, "send", p.send, "commit", p.commit, "settle", p.settle, "host", p.host,
		"bundles", p.bundles, "messages", p.messages)
}

// since is the time from start to now, and start moved to now.
func since(start *time.Time) time.Duration {
	now := time.Now()
	took := now.Sub(*start)
	*start = now
	return took
}

// timeSend starts timing a bundle of n messages, and returns what its
// commit runs right before the commit request: then, before.
func (p *syncPhases) timeSend(n int, before func()) func() {
	p.bundles++
	p.messages += n
	p.mark = time.Now()
	p.sending = true
	return func() {
		p.send += since(&p.mark)
		p.sending = false
		if before != nil {
			before()
		}
	}
}

// committed ends the timing of a bundle: its commit was answered (or it
// failed while it was being sent).
func (p *syncPhases) committed() {
	if p.sending {
		p.send += since(&p.mark)
		p.sending = false
		return
	}
	p.commit += since(&p.mark)
}
