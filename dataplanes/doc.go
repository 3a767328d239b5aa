// Package dataplanes is the contract between the core and a dataplane
// driver, and the registry drivers join from an init function.
//
// A driver programs the graph the core computes: Sync at start and on every
// periodic resync (make the dataplane hold exactly this snapshot), Apply for
// each batch of changes, Cleanup to remove everything it owns. It declares
// its Capabilities so the command can report a service port it cannot fully
// honour instead of silently dropping behaviour.
package dataplanes
