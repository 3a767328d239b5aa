//go:build !linux

package main

import (
	"fmt"
	"os"
)

func run() {
	fmt.Fprintln(os.Stderr, "switchyard-cni runs on Linux only (Windows nodes use their own CNI with the hns dataplane)")
	os.Exit(1)
}
