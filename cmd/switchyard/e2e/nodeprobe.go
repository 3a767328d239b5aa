//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// A vantage point sends one request to a destination and returns the
// answer line of the test application ("POD:PORT"), or an error.
type vantage struct {
	name string
	ask  func(dst netip.AddrPort) (string, error)
}

// fromNamespace asks from a process in a network namespace (the node's
// host, the external client).
func fromNamespace(name, ns string) vantage {
	return vantage{name: name, ask: func(dst netip.AddrPort) (string, error) {
		var c net.Conn
		err := ovstest.InNS(ns, func() (err error) {
			c, err = net.DialTimeout("tcp", dst.String(), time.Second)
			return err
		})
		if err != nil {
			return "", err
		}
		defer c.Close()
		return roundTrip(c, "probe")
	}}
}

// fromPod asks from inside a pod: the test application's prober there
// dials (GET /dial), reached from the node's host as the kubelet reaches
// pods.
func fromPod(name, nodeNS string, prober netip.AddrPort) vantage {
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DialContext: dialerIn(nodeNS), DisableKeepAlives: true}}
	return vantage{name: name, ask: func(dst netip.AddrPort) (string, error) {
		u := fmt.Sprintf("http://%s/dial?addr=%s&proto=tcp&timeout=1000", prober, url.QueryEscape(dst.String()))
		r, err := client.Get(u)
		if err != nil {
			return "", fmt.Errorf("prober: %w", err)
		}
		defer r.Body.Close()
		var res struct{ Answer, Error string }
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &res); err != nil {
			return "", fmt.Errorf("prober answered %q: %v", b, err)
		}
		if res.Error != "" {
			return "", fmt.Errorf("%s", res.Error)
		}
		return res.Answer, nil
	}}
}

// roundTrip sends a line and reads the answer line.
func roundTrip(c net.Conn, msg string) (string, error) {
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprintf(c, "%s\n", msg); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// podOf is the pod part of an answer "POD:PORT".
func podOf(answer string) string {
	pod, _, _ := strings.Cut(answer, ":")
	return pod
}

// servedBy reports whether n requests from v to dst were all answered by
// pods in want, each of them at least once.
func servedBy(v vantage, dst netip.AddrPort, want []string, n int) (bool, string) {
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		a, err := v.ask(dst)
		if err != nil {
			return false, err.Error()
		}
		if !slices.Contains(want, podOf(a)) {
			return false, "answered by " + a
		}
		seen[podOf(a)] = true
	}
	if len(seen) != len(want) {
		return false, fmt.Sprintf("saw only %d of %v", len(seen), want)
	}
	return true, ""
}

// probePath is a vantage point and a destination.
type probePath struct {
	from vantage
	to   netip.AddrPort
}

// everywhere checks that every path is served by exactly these pods (each
// seen), allowing a few seconds for the slowest path.
func everywhere(t testing.TB, paths []probePath, pods []string) {
	t.Helper()
	for _, p := range paths {
		if why := servedWithin(10*time.Second, p.from, p.to, pods); why != "" {
			t.Fatalf("%s -> %s: want %v: %s", p.from.name, p.to, pods, why)
		}
	}
}

// servedWithin waits until a round of requests from v to dst is answered by
// exactly these pods, each seen, and says why not if it never is. One round
// is 6 requests a pod: a round that misses a healthy pod by chance (2 in
// 2^12 with two pods) is asked again, a pod that is not programmed never
// answers.
func servedWithin(d time.Duration, v vantage, dst netip.AddrPort, pods []string) string {
	var why string
	if err := waitFor(d, func() error {
		ok, w := servedBy(v, dst, pods, 6*len(pods))
		why = w
		if !ok {
			return fmt.Errorf("%s", w)
		}
		return nil
	}); err != nil {
		return why
	}
	return ""
}

// unreachable reports whether a request from v to dst fails.
func unreachable(v vantage, dst netip.AddrPort) (bool, string) {
	a, err := v.ask(dst)
	if err == nil {
		return false, "answered by " + a
	}
	return true, ""
}

// latencies records how long each change took from the API write until
// traffic followed, and writes them as a table.
type latencies struct {
	mu   sync.Mutex
	rows []string
}

// follow runs write, then polls cond every 20 ms until it holds (at most
// limit) and records the time from the write.
func (l *latencies) follow(t testing.TB, what string, limit time.Duration, write func() error, cond func() (bool, string)) {
	t.Helper()
	start := time.Now()
	if err := write(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	last := ""
	for {
		ok, why := cond()
		if ok {
			break
		}
		last = why
		if time.Since(start) > limit {
			t.Fatalf("%s: traffic did not follow within %s: %s", what, limit, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
	d := time.Since(start)
	l.mu.Lock()
	l.rows = append(l.rows, fmt.Sprintf("| %s | %d ms |", what, d.Milliseconds()))
	l.mu.Unlock()
	t.Logf("%s: traffic followed %d ms after the write", what, d.Milliseconds())
}

// note records a line of the report that is not a latency.
func (l *latencies) note(format string, args ...any) {
	l.mu.Lock()
	l.rows = append(l.rows, fmt.Sprintf("| "+format+" | |", args...))
	l.mu.Unlock()
}

// write appends the table to the file SWITCHYARD_E2E_NODE_REPORT names.
func (l *latencies) write(t testing.TB, title string) {
	path := os.Getenv("SWITCHYARD_E2E_NODE_REPORT")
	text := "\n" + title + "\n\n| change (API write -> traffic follows) | time |\n|---|---|\n" + strings.Join(l.rows, "\n") + "\n"
	t.Log(text)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Logf("report: %v", err)
		return
	}
	defer f.Close()
	f.WriteString(text)
}

// heldConn is a TCP connection kept open and used every 50 ms; it records
// the first failure and the pod that answered.
type heldConn struct {
	name     string
	c        net.Conn
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	err      error
	answer   string
	rounds   int
	changed  string
	lastSeen time.Time
}

func holdConn(t testing.TB, name, ns string, dst netip.AddrPort) *heldConn {
	t.Helper()
	var c net.Conn
	if err := ovstest.InNS(ns, func() (err error) {
		c, err = net.DialTimeout("tcp", dst.String(), 2*time.Second)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	h := &heldConn{name: name, c: c, stop: make(chan struct{}), done: make(chan struct{})}
	first, err := roundTrip(c, "hello")
	if err != nil {
		t.Fatalf("%s: first round trip: %v", name, err)
	}
	h.answer = first
	go h.loop()
	t.Cleanup(func() { h.end() })
	return h
}

func (h *heldConn) loop() {
	defer close(h.done)
	for {
		select {
		case <-h.stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		a, err := roundTrip(h.c, "hello")
		h.mu.Lock()
		switch {
		case err != nil:
			h.err = err
		case a != h.answer:
			h.changed = a
		default:
			h.rounds++
			h.lastSeen = time.Now()
		}
		failed := h.err != nil || h.changed != ""
		h.mu.Unlock()
		if failed {
			return
		}
	}
}

// check fails the test if the connection broke or changed ends.
func (h *heldConn) check(t testing.TB) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		t.Errorf("%s broke after %d round trips: %v", h.name, h.rounds, h.err)
	}
	if h.changed != "" {
		t.Errorf("%s: answered by %s, then by %s", h.name, h.answer, h.changed)
	}
	if time.Since(h.lastSeen) > 2*time.Second {
		t.Errorf("%s: no round trip for %s", h.name, time.Since(h.lastSeen).Round(time.Millisecond))
	}
}

func (h *heldConn) end() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	<-h.done
	h.c.Close()
}

// withTimeout is a context for one API call.
func withTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}
