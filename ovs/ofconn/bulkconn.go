package ofconn

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"antrea.io/libOpenflow/openflow15"
)

// bulkConn is an OpenFlow 1.5 connection of the driver's own to the
// bridge, for bundles and dumps: a hello, then bundle control and add
// messages written through a large buffer, and multipart requests. Its
// reader answers echo requests (OVS probes idle connections), hands
// multipart replies to the dump under way, and errors and bundle control
// replies to the transaction under way.
type bulkConn struct {
	conn net.Conn

	wmu sync.Mutex // the writer (transactions and echo replies)
	w   *bufio.Writer

	mu      sync.Mutex
	events  []event
	notify  chan struct{} // a new event, or the connection ended
	readErr error         // set when the reader ended
	xid     uint32
	bundle  uint32
	// parts receives the body of each multipart reply part: the dump
	// under way (set, and called, under partsMu).
	partsMu sync.Mutex
	parts   func(xid uint32, body []byte)
	// watch hears the flow monitor's updates, when one is armed
	// (flowwatch.go; under partsMu).
	watch func(FlowChange)
	// reqs is MultipartEach's buffer, kept from one call to the next (a
	// Conn uses its Link under its bulkMu: one call at a time).
	reqs []byte
}

// event is an error, a bundle control reply or the end of a multipart
// reply.
type event struct {
	xid       uint32
	done      bool // the last part of a multipart reply
	isError   bool
	errType   uint16
	errCode   uint16
	ctrlReply uint16 // bundle control reply type
}

const (
	ofHeaderLen      = 8
	bundleAddHeadLen = ofHeaderLen + 8 // bundle_id, pad, flags
	bundleFlags      = openflow15.OFPBCT_ATOMIC | openflow15.OFPBCT_ORDERED
	writeBufferSize  = 256 << 10
	maxRefusedShown  = 5
)

// dialBulk connects and exchanges hellos (OpenFlow 1.5).
func dialBulk(ctx context.Context, socket string) (*bulkConn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, err
	}
	bc := &bulkConn{conn: conn, w: bufio.NewWriterSize(conn, writeBufferSize), notify: make(chan struct{}, 1)}
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	hello := appendOFHeader(nil, openflow15.Type_Hello, 0, ofHeaderLen)
	if _, err := conn.Write(hello); err != nil {
		conn.Close()
		return nil, err
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	typ, _, _, err := readMessage(r, nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("waiting for the switch's hello: %w", err)
	}
	if typ != openflow15.Type_Hello {
		conn.Close()
		return nil, fmt.Errorf("the switch answered the hello with message type %d (does the bridge allow OpenFlow15?)", typ)
	}
	conn.SetDeadline(time.Time{})
	go bc.read(r)
	return bc, nil
}

func appendOFHeader(b []byte, typ uint8, xid uint32, length int) []byte {
	b = append(b, openflow15.VERSION, typ)
	b = binary.BigEndian.AppendUint16(b, uint16(length))
	return binary.BigEndian.AppendUint32(b, xid)
}

// readMessage reads one message: its type, xid and body. The body is
// read into buf when it fits (grown otherwise): it is valid until the
// next call with the same buf.
func readMessage(r *bufio.Reader, buf []byte) (uint8, uint32, []byte, error) {
	var h [ofHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, 0, nil, err
	}
	n := int(binary.BigEndian.Uint16(h[2:]))
	if n < ofHeaderLen {
		return 0, 0, nil, fmt.Errorf("message of length %d", n)
	}
	body := buf[:0]
	if cap(body) < n-ofHeaderLen {
		body = make([]byte, n-ofHeaderLen)
	}
	body = body[:n-ofHeaderLen]
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, 0, nil, err
	}
	return h[1], binary.BigEndian.Uint32(h[4:]), body, nil
}

// read runs until the connection ends. Every message is handled before
// the next is read, so one buffer serves them all (a periodic resync's
// dump is large: docs/scale.md, "Figures behind the code").
func (bc *bulkConn) read(r *bufio.Reader) {
	var buf []byte
	for {
		typ, xid, body, err := readMessage(r, buf)
		buf = body
		if err != nil {
			bc.mu.Lock()
			bc.readErr = err
			bc.mu.Unlock()
			bc.wake()
			bc.partsMu.Lock()
			if bc.watch != nil {
				bc.watch(FlowChange{Kind: FlowsUnknown})
			}
			bc.partsMu.Unlock()
			return
		}
		switch typ {
		case openflow15.Type_EchoRequest:
			bc.send(appendOFHeader(nil, openflow15.Type_EchoReply, xid, ofHeaderLen+len(body)), body)
		case openflow15.Type_Error:
			if len(body) >= 4 {
				bc.push(event{xid: xid, isError: true, errType: binary.BigEndian.Uint16(body), errCode: binary.BigEndian.Uint16(body[2:])})
			}
		case openflow15.Type_MultiPartReply:
			bc.partsMu.Lock()
			switch {
			case xid == 0 && isFlowMonitorReply(body): // an update: no request's
				if bc.watch != nil {
					watchUpdates(body, bc.watch)
				}
			case bc.parts != nil:
				bc.parts(xid, body)
			}
			bc.partsMu.Unlock()
		case openflow15.Type_BundleControl:
			if len(body) >= 6 {
				bc.push(event{xid: xid, ctrlReply: binary.BigEndian.Uint16(body[4:])})
			}
		}
	}
}

func (bc *bulkConn) push(e event) {
	bc.mu.Lock()
	bc.events = append(bc.events, e)
	bc.mu.Unlock()
	bc.wake()
}

func (bc *bulkConn) wake() {
	select {
	case bc.notify <- struct{}{}:
	default:
	}
}

func (bc *bulkConn) Broken() bool {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return bc.readErr != nil
}

func (bc *bulkConn) Close() { bc.conn.Close() }

func (bc *bulkConn) nextXID() uint32 {
	bc.xid++
	return bc.xid
}

// send writes messages and flushes them.
func (bc *bulkConn) send(msgs ...[]byte) error {
	bc.wmu.Lock()
	defer bc.wmu.Unlock()
	for _, m := range msgs {
		if _, err := bc.w.Write(m); err != nil {
			return err
		}
	}
	return bc.w.Flush()
}

// Multipart sends a request and hands the entries of the reply to entry
// (called from the reader).
func (bc *bulkConn) Multipart(ctx context.Context, typ uint16, body []byte, entry func([]byte) error) error {
	return bc.MultipartEach(ctx, typ, [][]byte{body}, entry)
}

// MultipartEach sends requests of one type in one write and hands the
// entries of every reply, in order, to entry (called from the reader).
// The switch reads them one by one (OVS: at most 50 of a connection per
// pass of its main loop), so what other connections send is served in
// between.
func (bc *bulkConn) MultipartEach(ctx context.Context, typ uint16, bodies [][]byte, entry func([]byte) error) error {
	if len(bodies) == 0 {
		return nil
	}
	deadline, _ := ctx.Deadline()
	bc.conn.SetWriteDeadline(deadline)
	bc.mu.Lock()
	bc.events = bc.events[:0]
	bc.mu.Unlock()
	first := bc.xid + 1
	size := 0
	for _, body := range bodies {
		size += ofHeaderLen + mpHeaderLen + len(body)
	}
	reqs := slices.Grow(bc.reqs[:0], size) // one write of every request
	for _, body := range bodies {
		reqs = appendOFHeader(reqs, openflow15.Type_MultiPartRequest, bc.nextXID(), ofHeaderLen+mpHeaderLen+len(body))
		reqs = binary.BigEndian.AppendUint16(reqs, typ)
		reqs = append(reqs, 0, 0, 0, 0, 0, 0)
		reqs = append(reqs, body...)
	}
	bc.reqs = reqs
	last := bc.xid
	var failed error
	bc.partsMu.Lock()
	bc.parts = func(x uint32, b []byte) {
		if x < first || x > last || len(b) < mpHeaderLen || failed != nil {
			return
		}
		more := binary.BigEndian.Uint16(b[2:])&openflow15.OFPMPF_REPLY_MORE != 0
		failed = replyEntries(typ, b[mpHeaderLen:], entry)
		if !more {
			bc.push(event{xid: x, done: true})
		}
	}
	bc.partsMu.Unlock()
	stop := func() {
		bc.partsMu.Lock()
		bc.parts = nil
		bc.partsMu.Unlock()
	}
	if err := bc.send(reqs); err != nil {
		stop()
		return err
	}
	evs, err := bc.waitFor(ctx, last)
	stop() // no part is being read from here on
	if err != nil {
		return err
	}
	for x := first; x <= last; x++ {
		if err := controlError(evs, x, "answer a multipart request"); err != nil {
			return err
		}
	}
	return failed
}

// replyEntries hands each entry of a multipart reply's body to entry.
// Entries start with their 16-bit length, except an aggregate statistics
// reply's (its body is one ofp_stats: reserved, then length) and a switch
// description's (one ofp_desc, of fixed length).
func replyEntries(typ uint16, body []byte, entry func([]byte) error) error {
	if typ == openflow15.MultipartType_AggregateStats || typ == openflow15.MultipartType_Desc {
		return entry(body)
	}
	for rest := body; len(rest) > 0; {
		n := len(rest) + 1 // one byte left: a cut entry
		if len(rest) >= 2 {
			n = int(binary.BigEndian.Uint16(rest))
		}
		if n < 2 || n > len(rest) {
			return fmt.Errorf("a multipart entry of %d bytes in %d", n, len(rest))
		}
		if err := entry(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// waitFor waits for the reply (or error) to xid and returns every event
// up to it.
func (bc *bulkConn) waitFor(ctx context.Context, xid uint32) ([]event, error) {
	for {
		bc.mu.Lock()
		for i, e := range bc.events {
			if e.xid == xid {
				evs := append([]event(nil), bc.events[:i+1]...)
				bc.events = append(bc.events[:0], bc.events[i+1:]...)
				bc.mu.Unlock()
				return evs, nil
			}
		}
		readErr := bc.readErr
		bc.mu.Unlock()
		if readErr != nil {
			return nil, fmt.Errorf("connection lost: %w", readErr)
		}
		select {
		case <-bc.notify:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
