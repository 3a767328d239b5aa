// Package engine is the OVS driver's desired state, pure: no I/O (it logs
// only a bug of its own, rerender.go). A Model turns the graph (service
// ports, the node, its peers) and the bridge's ports into the flows and
// groups the bridge should hold, each set by an owner (a service port, a
// pod's port, a peer, the static pipeline), and into the host's share
// (routes, captures, NodePorts). Its State keeps what is desired next to
// what is believed installed, by cookie and group ID, and hands the
// driver the difference as one batch (Pending) to commit (Committed), or
// adopts what a read-back found (Adopt). Flows are told apart by identity
// (table, priority, match): two owners wanting one match get one
// installed and the other reported. Once committed, a service port's
// flows are not kept but rendered again when needed (rerender.go).
package engine
