// Package builtin registers the dataplane drivers that ship with
// Switchyard, for the switchyard command; a third-party binary imports it
// too to offer the built-in drivers next to its own.
package builtin

import (
	_ "github.com/switchyard-proxy/switchyard/hns"          // registers "hns"
	_ "github.com/switchyard-proxy/switchyard/hns/hnstrace" // registers hns's tracer (its simulator, for explain)
	_ "github.com/switchyard-proxy/switchyard/ovs"          // registers "ovs"
)
