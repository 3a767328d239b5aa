// Package vswitch holds libovsdb models generated from the Open vSwitch
// 3.1 schema (vswitch.ovsschema, schema version 8.3.1, copied here).
// Regenerate with `go generate ./ovs/ovsdb/vswitch` after replacing the
// schema; delete the generated files first.
package vswitch

//go:generate go tool modelgen --extended -p vswitch -o . vswitch.ovsschema
