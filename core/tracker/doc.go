// Package tracker keeps the current Services, EndpointSlices and this Node,
// and turns their changes into graph deltas.
//
// A change marks its Service dirty; only dirty Services are rebuilt, so a
// single endpoint change costs O(that Service). The tracker remembers what
// the driver last acknowledged ("applied"): a Batch is the difference between
// that and the current objects, and only Commit moves "applied" forward. A
// failed apply is therefore retried with everything still pending, merged
// with whatever changed meanwhile. The tracker does no I/O; its clock is
// injected.
package tracker
