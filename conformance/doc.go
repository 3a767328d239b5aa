// Package conformance runs one list of cases, written as data files, over
// every dataplane driver.
//
// A case (cases/*.yaml) is cluster objects applied in steps and, after each
// step, probes: a source in the test world (a pod, a backend pod, the node,
// an external client), a destination frontend, and the expected outcome
// (which endpoints answer, whether they stick, or that the connection is
// rejected or dropped). The world — node, pods, remote backends, clients
// and their addresses — is fixed (world.go) so that the same case means the
// same thing to every driver.
//
// A Harness brings one driver's dataplane up with that world and sends the
// probes; Run drives the real driver through the core (tracker, Sync, then
// Apply per step) exactly as `switchyard run` does, and judges what the
// probes saw. A case the driver declares it cannot honour (a capability
// gap), or that the harness cannot probe, is reported unsupported with the
// reason; it is never counted as a pass.
package conformance
