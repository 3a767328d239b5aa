// Package graph holds the dataplane-neutral service graph: for one node, every
// service port with its frontends and the endpoints each kind of traffic may
// reach, plus the deltas between two graphs.
//
// The types here are plain data built from the standard library only, so a
// driver can read them without importing client-go or k8s.io/api. Values
// handed out by the core are shared between snapshots and deltas: treat them
// as immutable.
package graph
