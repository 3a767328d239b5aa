// Package vswitch holds libovsdb models of the Open vSwitch tables the
// driver uses, generated from the Open vSwitch 3.1 schema
// (vswitch.ovsschema, schema version 8.3.1, copied here) trimmed to those
// tables (tables.ovsschema): the client monitors only these. Regenerate
// with `go generate ./ovs/ovsdb/vswitch` after replacing the schema or
// changing the list; delete the generated files first.
package vswitch

//go:generate go run ../../../hack/trimschema -o tables.ovsschema vswitch.ovsschema Open_vSwitch Bridge Port Interface Datapath CT_Zone CT_Timeout_Policy
//go:generate go tool modelgen --extended -p vswitch -o . tables.ovsschema
