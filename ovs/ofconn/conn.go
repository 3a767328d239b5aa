// Package ofconn is the driver's OpenFlow 1.5 connection to one bridge:
// ofnet's ofctrl connection, which reconnects forever, reports every
// (re)connection so the driver can reconcile, sends packet-outs and hands
// packet-ins to a bounded queue so the receive loop never blocks; and a
// bulk connection of its own (bulkconn.go) that sends every change as one
// atomic bundle in large writes and dumps the driver's flows and groups,
// read from the wire, and carries a flow monitor that reports the flow
// changes other connections make (flowwatch.go).
package ofconn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"antrea.io/libOpenflow/openflow15"
	"antrea.io/libOpenflow/util"
	"antrea.io/ofnet/ofctrl"
	"k8s.io/klog/v2"
)

// ControllerID is the controller id Switchyard sets on every connection,
// so controller() actions in adopted flows keep reaching it after a restart
// (ofnet picks a random one per process).
const ControllerID uint16 = 0x5359

// Handler hears about connections and packet-ins. Both are called from
// the connection's own goroutines, never from ofnet's receive loop.
type Handler interface {
	// Connected runs after every (re)connection, once the switch is ready,
	// with the connection's number (1 for the first); flows may have been
	// lost (ovs-vswitchd restarted).
	Connected(n int)
	// PacketIn handles one packet sent to the controller.
	PacketIn(pkt *ofctrl.PacketIn)
}

// Conn is one bridge connection.
type Conn struct {
	socket  string
	handler Handler
	ctrl    *ofctrl.Controller
	packets chan *ofctrl.PacketIn
	stop    chan struct{}
	done    chan struct{}

	closeOnce sync.Once

	mu        sync.Mutex
	sw        *ofctrl.OFSwitch
	ready     chan struct{} // closed while connected
	connected int           // number of connections so far
	stats     Stats

	bulkMu sync.Mutex // one bundle or dump at a time
	bulk   Link       // what bundles and dumps go over (bulkconn.go), dialled by dial
	dial   func(context.Context) (Link, error)
	over   bool  // made by Over: Send goes over the link
	aside  *Conn // Aside's, made when first asked for (under mu)

	watch   func(FlowChange) // WatchFlows's (under bulkMu)
	watched Link             // the link whose flow monitor is armed (under mu)
}

// Over returns a connection whose bundles and dumps go over the links
// dial makes (one at a time; another once one is Broken), named name in
// errors: a switch's stand-in (ofconntest.InMemory). It is connected from
// the start and has no packet-ins; Send hands a message to the link if it
// is a MessageSender, and fails with ErrNotConnected otherwise.
func Over(name string, dial func(context.Context) (Link, error)) *Conn {
	c := &Conn{socket: name, stop: make(chan struct{}), done: make(chan struct{}), ready: make(chan struct{}), connected: 1, dial: dial, over: true}
	close(c.done)
	close(c.ready)
	return c
}

// Dial starts connecting to the bridge's management socket (a path) and
// keeps reconnecting until Close.
func Dial(socket string, h Handler) *Conn {
	c := &Conn{
		socket:  socket,
		handler: h,
		packets: make(chan *ofctrl.PacketIn, 256),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		ready:   make(chan struct{}),
	}
	c.dial = func(ctx context.Context) (Link, error) { return dialBulk(ctx, socket) }
	c.ctrl = ofctrl.NewController(&app{c})
	go c.connectLoop()
	go c.packetLoop()
	return c
}

// connectLoop runs ofctrl's Connect, which blocks while connected and
// reconnects by itself after a lost connection; the first dial gives up
// only when told to (MaxRetry 0 means forever).
func (c *Conn) connectLoop() {
	defer close(c.done)
	for {
		err := c.ctrl.Connect(c.socket)
		select {
		case <-c.stop:
			return
		default:
		}
		klog.V(2).InfoS("OpenFlow connection ended; retrying", "socket", c.socket, "err", err)
		select {
		case <-c.stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Conn) packetLoop() {
	for {
		select {
		case <-c.stop:
			return
		case p := <-c.packets:
			c.handler.PacketIn(p)
		}
	}
}

// Close disconnects; the bridge keeps its flows. Closing twice is fine.
func (c *Conn) Close() {
	c.closeOnce.Do(c.close)
}

func (c *Conn) close() {
	close(c.stop)
	c.mu.Lock()
	sw := c.sw
	c.mu.Unlock()
	if sw != nil {
		sw.Disconnect()
	}
	if c.ctrl != nil { // nil for an in-memory bridge's
		c.ctrl.Delete()
	}
	c.bulkMu.Lock()
	if c.bulk != nil {
		c.bulk.Close()
		c.bulk = nil
	}
	c.bulkMu.Unlock()
	c.closeAside()
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
	}
}

// WaitReady blocks until connected or ctx ends.
func (c *Conn) WaitReady(ctx context.Context) error {
	c.mu.Lock()
	ready := c.ready
	c.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("no OpenFlow connection to %s: %w", c.socket, ctx.Err())
	}
}

// ErrNotConnected is returned while the bridge is unreachable.
var ErrNotConnected = errors.New("not connected to the bridge")

func (c *Conn) current() (*ofctrl.OFSwitch, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sw == nil {
		return nil, fmt.Errorf("%w (%s)", ErrNotConnected, c.socket)
	}
	return c.sw, nil
}

// Connections counts the connections made so far.
func (c *Conn) Connections() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connected
}

// Send sends one message outside a bundle (packet-outs). The message must
// not be changed afterwards: ofnet marshals it later.
func (c *Conn) Send(msg util.Message) error {
	if c.over {
		return c.sendOverLink(msg)
	}
	sw, err := c.current()
	if err != nil {
		return err
	}
	return sw.Send(msg)
}

// app adapts ofctrl's callbacks.
type app struct{ c *Conn }

func (a *app) SwitchConnected(sw *ofctrl.OFSwitch) {
	c := a.c
	// Packet-in2 carries userdata; the fixed controller id makes our
	// controller() actions reach us; full packets for crafted replies.
	if err := sw.SetPacketInFormat(openflow15.OFPUTIL_PACKET_IN_NXT2); err != nil {
		klog.ErrorS(err, "Setting packet-in format failed")
	}
	if err := sw.Send(openflow15.NewSetControllerID(ControllerID)); err != nil {
		klog.ErrorS(err, "Setting the controller id failed")
	}
	c.mu.Lock()
	c.sw = sw
	c.connected++
	n := c.connected
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}
	c.mu.Unlock()
	klog.InfoS("Connected to the bridge", "socket", c.socket)
	go c.handler.Connected(n)
}

func (a *app) SwitchDisconnected(sw *ofctrl.OFSwitch) {
	c := a.c
	c.mu.Lock()
	if c.sw == sw {
		c.sw = nil
		c.ready = make(chan struct{})
	}
	c.mu.Unlock()
	klog.InfoS("Lost the bridge connection; reconnecting", "socket", c.socket)
}

func (a *app) PacketRcvd(_ *ofctrl.OFSwitch, pkt *ofctrl.PacketIn) {
	select {
	case a.c.packets <- pkt:
	default:
		a.c.mu.Lock()
		a.c.stats.DroppedPacketIns++
		a.c.mu.Unlock()
	}
}

func (a *app) MultipartReply(*ofctrl.OFSwitch, *openflow15.MultipartReply) {}

func (a *app) FlowGraphEnabledOnSwitch() bool        { return false }
func (a *app) TLVMapEnabledOnSwitch() bool           { return false }
func (a *app) PortStatusRcvd(*openflow15.PortStatus) {}
func (a *app) MaxRetry() int                         { return 0 }
func (a *app) RetryInterval() time.Duration          { return 200 * time.Millisecond }

// Stats counts what this connection has committed, and the packet-ins
// dropped because the queue to the handler was full.
type Stats struct {
	Bundles          int
	FlowMods         int
	GroupMods        int
	DroppedPacketIns int
}

// Stats returns the counts so far.
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// MessageSender is a Link that also takes single messages (packet-outs).
type MessageSender interface {
	Send(msg util.Message) error
}

// sendOverLink hands msg to the link of a connection made by Over.
func (c *Conn) sendOverLink(msg util.Message) error {
	c.bulkMu.Lock()
	defer c.bulkMu.Unlock()
	l, err := c.bulkLink(context.Background())
	if err != nil {
		return err
	}
	s, ok := l.(MessageSender)
	if !ok {
		return fmt.Errorf("%w (%s: no packet-outs)", ErrNotConnected, c.socket)
	}
	return s.Send(msg)
}
