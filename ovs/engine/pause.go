package engine

// Pause paces a long walk taken under the driver's lock (an audit's copy
// of the installed view and of the host side): every Every entries it
// calls Yield, which lets the lock go and takes it again, so a change
// waits for one slice of the walk, not the whole (docs/scale.md). State
// and HostModel may change during Yield, and a walk over one of their
// maps goes on afterwards under Go's rules for a map changed while it is
// ranged over: an entry removed before it is reached is not visited, one
// added may or may not be. Whoever walks says what that means for them.
type Pause struct {
	Every int    // entries between two yields; 0: never
	Yield func() // lets the lock go and takes it again
	n     int
}

// Step counts one entry; it reports whether it yielded after it.
func (p *Pause) Step() bool {
	p.n++
	if p.Every <= 0 || p.n%p.Every != 0 {
		return false
	}
	p.Yield()
	return true
}
