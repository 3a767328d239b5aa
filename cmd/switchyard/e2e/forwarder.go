//go:build linux

package e2e

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// forwarder is a TCP relay to the API server that a test can cut and
// restore, to cut switchyard off while the test itself still writes.
type forwarder struct {
	t      testing.TB
	ns     string // the namespace it listens in
	addr   string // where it listens
	target string
	mu     sync.Mutex
	l      net.Listener
	conns  []net.Conn
}

// newForwarder relays from a loopback port of a network namespace (a
// node's, where switchyard runs) to target (on this machine's loopback).
func newForwarder(t testing.TB, ns, target string) *forwarder {
	t.Helper()
	f := &forwarder{t: t, ns: ns, target: target}
	var l net.Listener
	err := ovstest.InNS(ns, func() (err error) {
		l, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	f.addr = l.Addr().String()
	f.serve(l)
	t.Cleanup(f.cut)
	return f
}

func (f *forwarder) serve(l net.Listener) {
	f.mu.Lock()
	f.l = l
	f.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", f.target)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, up)
			f.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

// cut closes the listener and every relayed connection: clients see the
// API server gone (connection refused).
func (f *forwarder) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.l != nil {
		f.l.Close()
		f.l = nil
	}
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// restore listens again on the same address.
func (f *forwarder) restore() {
	f.t.Helper()
	var l net.Listener
	err := ovstest.InNS(f.ns, func() (err error) {
		l, err = net.Listen("tcp", f.addr)
		return err
	})
	if err != nil {
		f.t.Fatalf("forwarder: listening again on %s: %v", f.addr, err)
	}
	f.serve(l)
}
