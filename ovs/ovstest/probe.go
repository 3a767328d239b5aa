//go:build linux

package ovstest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"
)

// listenTCP listens on host:port ("" host: all addresses) inside a
// namespace until the test ends.
func listenTCP(t testing.TB, ns, host string, port uint16) net.Listener {
	t.Helper()
	var l net.Listener
	err := InNS(ns, func() (err error) {
		l, err = net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
		return err
	})
	if err != nil {
		t.Fatalf("listen tcp in %s: %v", ns, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// ServeTCP answers every connection to port (all addresses) in a
// namespace with "identity\n" and the address it came from ("src\n"),
// until the test ends.
func ServeTCP(t testing.TB, ns string, port uint16, identity string) {
	t.Helper()
	ServeTCPAt(t, ns, "", port, identity)
}

// ServeTCPAt is ServeTCP on one address (host "" for all).
func ServeTCPAt(t testing.TB, ns, host string, port uint16, identity string) {
	t.Helper()
	l := listenTCP(t, ns, host, port)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "%s\n%s\n", identity, remoteIP(c.RemoteAddr()))
			c.Close()
		}
	}()
}

// ServeUDP answers every datagram to port in a namespace with identity and
// the address it came from ("identity\nsrc").
func ServeUDP(t testing.TB, ns string, port uint16, identity string) {
	t.Helper()
	ServeUDPAt(t, ns, "", port, identity)
}

// ServeUDPAt is ServeUDP on one address (host "" for all).
func ServeUDPAt(t testing.TB, ns, host string, port uint16, identity string) {
	t.Helper()
	var pc net.PacketConn
	err := InNS(ns, func() (err error) {
		pc, err = net.ListenPacket("udp", net.JoinHostPort(host, fmt.Sprint(port)))
		return err
	})
	if err != nil {
		t.Fatalf("listen udp in %s: %v", ns, err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(append([]byte(identity+"\n"+remoteIP(from)+"\n"), buf[:n]...), from)
		}
	}()
}

// ErrRefused is a probe's "connection refused" (TCP reset or ICMP port
// unreachable).
var ErrRefused = errors.New("refused")

// ErrTimeout is a probe that got no answer.
var ErrTimeout = errors.New("no answer")

// ErrUnreachable is a probe the network said it cannot deliver: ICMP host
// or network unreachable, or no route in the client's own table.
var ErrUnreachable = errors.New("unreachable")

func classify(err error) error {
	var ne net.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrRefused
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: %v", ErrTimeout, err) // says whether the connect or the reply timed out
	}
	return err
}

// dialFrom dials from a namespace, from src when it is set.
func dialFrom(ns, network string, src netip.Addr, dst netip.AddrPort, timeout time.Duration) (net.Conn, error) {
	return dialFromPort(ns, network, src, 0, dst, timeout)
}

// dialFromPort dials from a namespace, from src and srcPort when they are
// set (the kernel picks what is not). A given source port is bound with
// SO_REUSEADDR, so that a port whose last connection (also bound so) is in
// TIME_WAIT can be taken again for another destination, as the kernel's
// own choice of port may.
func dialFromPort(ns, network string, src netip.Addr, srcPort uint16, dst netip.AddrPort, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := InNS(ns, func() (err error) {
		d := net.Dialer{Timeout: timeout}
		if srcPort != 0 {
			d.Control = func(_, _ string, rc syscall.RawConn) error {
				var serr error
				if err := rc.Control(func(fd uintptr) {
					serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
				}); err != nil {
					return err
				}
				return serr
			}
		}
		if src.IsValid() || srcPort != 0 {
			var ip net.IP
			if src.IsValid() {
				ip = src.AsSlice()
			}
			d.LocalAddr = &net.UDPAddr{IP: ip, Port: int(srcPort)}
			if network == "tcp" {
				d.LocalAddr = &net.TCPAddr{IP: ip, Port: int(srcPort)}
			}
		}
		c, err = d.Dial(network, dst.String())
		return err
	})
	if err != nil {
		return nil, classify(err)
	}
	return c, nil
}

// ProbeTCP connects from a namespace (optionally from a source address)
// and returns the identity the server sent.
func ProbeTCP(ns string, src netip.Addr, dst netip.AddrPort, timeout time.Duration) (string, error) {
	id, _, err := ProbeTCPSeen(ns, src, dst, timeout)
	return id, err
}

// ProbeTCPSeen is ProbeTCP that also returns the source address the
// server saw.
func ProbeTCPSeen(ns string, src netip.Addr, dst netip.AddrPort, timeout time.Duration) (string, netip.Addr, error) {
	return ProbeTCPFromPort(ns, src, 0, dst, timeout)
}

// ProbeTCPFromPort is ProbeTCPSeen from a given source port (0: any).
func ProbeTCPFromPort(ns string, src netip.Addr, srcPort uint16, dst netip.AddrPort, timeout time.Duration) (string, netip.Addr, error) {
	c, err := dialFromPort(ns, "tcp", src, srcPort, dst, timeout)
	if err != nil {
		return "", netip.Addr{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", netip.Addr{}, classify(err)
	}
	seenLine, _ := r.ReadString('\n')
	seen, _ := netip.ParseAddr(strings.TrimSpace(seenLine))
	return strings.TrimSpace(line), seen, nil
}

// ProbeUDP sends one datagram from a namespace and returns the identity in
// the reply.
func ProbeUDP(ns string, src netip.Addr, dst netip.AddrPort, timeout time.Duration) (string, error) {
	id, _, err := ProbeUDPSeen(ns, src, dst, timeout)
	return id, err
}

// ProbeUDPSeen is ProbeUDP that also returns the source address the
// server saw.
func ProbeUDPSeen(ns string, src netip.Addr, dst netip.AddrPort, timeout time.Duration) (string, netip.Addr, error) {
	return ProbeUDPFromPort(ns, src, 0, dst, timeout)
}

// ProbeUDPFromPort is ProbeUDPSeen from a given source port (0: any).
func ProbeUDPFromPort(ns string, src netip.Addr, srcPort uint16, dst netip.AddrPort, timeout time.Duration) (string, netip.Addr, error) {
	return probeUDP(ns, src, srcPort, dst, []byte("probe"), 1, timeout)
}

// ProbeUDPSized is ProbeUDP with rounds datagrams of size bytes from one
// socket (over the MTU, IP fragments both ways: ServeUDP's answer carries
// the datagram back); it fails unless every datagram came back whole from
// one server, whose identity it returns.
func ProbeUDPSized(ns string, dst netip.AddrPort, size, rounds int, timeout time.Duration) (string, error) {
	payload := []byte("n" + strings.Repeat("o", size-1))
	id, _, err := probeUDP(ns, netip.Addr{}, 0, dst, payload, rounds, timeout)
	return id, err
}

// probeUDP sends payload rounds times and checks that each of ServeUDP's
// answers ("identity\nseen address\n" and the payload) carries it back
// whole, from one identity.
func probeUDP(ns string, src netip.Addr, srcPort uint16, dst netip.AddrPort, payload []byte, rounds int, timeout time.Duration) (string, netip.Addr, error) {
	c, err := dialFromPort(ns, "udp", src, srcPort, dst, timeout)
	if err != nil {
		return "", netip.Addr{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	var id, first string
	var seen netip.Addr
	buf := make([]byte, 65536)
	for r := range rounds {
		if _, err := c.Write(payload); err != nil {
			return "", netip.Addr{}, classify(err)
		}
		n, err := c.Read(buf)
		if err != nil {
			return "", netip.Addr{}, classify(err)
		}
		var rest, seenText, echoed string
		id, rest, _ = strings.Cut(string(buf[:n]), "\n")
		seenText, echoed, _ = strings.Cut(rest, "\n")
		if echoed != string(payload) {
			return id, netip.Addr{}, fmt.Errorf("answer %d from %q carried %d bytes back, not the %d sent", r+1, id, len(echoed), len(payload))
		}
		if r == 0 {
			first = id
		} else if id != first {
			return id, netip.Addr{}, fmt.Errorf("answer %d from %q, the first from %q", r+1, id, first)
		}
		seen, _ = netip.ParseAddr(seenText)
	}
	return id, seen, nil
}

// remoteIP is a peer's address without its port.
func remoteIP(a net.Addr) string {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return ""
	}
	return ap.Addr().Unmap().String()
}

// ServeEcho echoes every line back on long-lived connections.
func ServeEcho(t testing.TB, ns string, port uint16) {
	t.Helper()
	serveEcho(t, ns, port, "")
}

// serveEcho answers every connection with greeting (when not empty) and
// then echoes every line back, until the test ends.
func serveEcho(t testing.TB, ns string, port uint16, greeting string) {
	t.Helper()
	l := listenTCP(t, ns, "", port)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if greeting != "" {
					fmt.Fprintln(c, greeting)
				}
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
}

// Conn is a long-lived client connection opened in a namespace.
type Conn struct{ c net.Conn }

// Dial opens a TCP connection from a namespace.
func Dial(ns string, dst netip.AddrPort, timeout time.Duration) (*Conn, error) {
	var c net.Conn
	err := InNS(ns, func() (err error) {
		c, err = net.DialTimeout("tcp", dst.String(), timeout)
		return err
	})
	if err != nil {
		return nil, classify(err)
	}
	return &Conn{c: c}, nil
}

// RoundTrip sends a line and waits for its echo.
func (c *Conn) RoundTrip(msg string, timeout time.Duration) error {
	c.c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.c.Write([]byte(msg + "\n")); err != nil {
		return classify(err)
	}
	line, err := bufio.NewReader(c.c).ReadString('\n')
	if err != nil {
		return classify(err)
	}
	if strings.TrimSpace(line) != msg {
		return fmt.Errorf("echo %q, want %q", line, msg)
	}
	return nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// ServeIdentityEcho answers every connection to port in a namespace with
// "identity\n", then echoes every line back, until the test ends: a
// long-lived connection that knows which endpoint it reached.
func ServeIdentityEcho(t testing.TB, ns string, port uint16, identity string) {
	t.Helper()
	serveEcho(t, ns, port, identity)
}

// DialIdentity opens a connection from a namespace to a ServeIdentityEcho
// server (through a Service, say) and returns it with the identity of
// the one that answered.
func DialIdentity(ns string, dst netip.AddrPort, timeout time.Duration) (*Conn, string, error) {
	c, err := dialFrom(ns, "tcp", netip.Addr{}, dst, timeout)
	if err != nil {
		return nil, "", err
	}
	c.SetDeadline(time.Now().Add(timeout))
	id, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		c.Close()
		return nil, "", classify(err)
	}
	return &Conn{c: c}, strings.TrimSpace(id), nil
}
