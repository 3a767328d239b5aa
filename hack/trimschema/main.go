// Command trimschema writes an OVSDB schema with only the named tables,
// so that libovsdb's modelgen generates models for the tables a program
// uses and not the whole database (ovs/ovsdb/vswitch/gen.go runs it).
//
//	trimschema -o OUT SCHEMA TABLE...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
)

func main() {
	out := flag.String("o", "", "the trimmed schema's file")
	flag.Parse()
	if *out == "" || flag.NArg() < 2 {
		fmt.Fprintln(os.Stderr, "usage: trimschema -o OUT SCHEMA TABLE...")
		os.Exit(2)
	}
	if err := trim(flag.Arg(0), *out, flag.Args()[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "trimschema:", err)
		os.Exit(1)
	}
}

func trim(in, out string, keep []string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var schema map[string]json.RawMessage
	if err := json.Unmarshal(b, &schema); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	var tables map[string]json.RawMessage
	if err := json.Unmarshal(schema["tables"], &tables); err != nil {
		return fmt.Errorf("%s: tables: %w", in, err)
	}
	for _, t := range keep {
		if _, ok := tables[t]; !ok {
			return fmt.Errorf("%s has no table %q", in, t)
		}
	}
	for t := range tables {
		if !slices.Contains(keep, t) {
			delete(tables, t)
		}
	}
	if schema["tables"], err = json.Marshal(tables); err != nil {
		return err
	}
	b, err = json.MarshalIndent(schema, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}
