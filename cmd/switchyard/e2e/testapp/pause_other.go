//go:build !linux

package main

import (
	"os"
	"os/signal"
)

// pause waits for an interrupt (the sandbox image is Linux only).
func pause() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
}
