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
// probes saw. What each step needs of a driver is read from the case alone
// (Case.Needs: its objects, probes and declarations), never from the core
// or the driver. A step that needs a capability the driver declares it
// lacks, or that the harness cannot probe, is applied but not judged, with
// the reason; the other steps are. A case no step of which can be judged
// is unsupported; neither counts as a full pass.
package conformance
