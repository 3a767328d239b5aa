package ofconn

import (
	"context"
	"encoding/binary"
	"fmt"

	"antrea.io/libOpenflow/openflow15"
)

// The bundle side of bulkConn: one batch as one atomic OpenFlow bundle.

// Transact sends the batch as a bundle, closes it, and commits it if the
// switch took every message.
func (bc *bulkConn) Transact(ctx context.Context, b *Batch, beforeCommit func()) error {
	deadline, _ := ctx.Deadline()
	bc.conn.SetWriteDeadline(deadline)
	bc.mu.Lock()
	bc.events = bc.events[:0]
	bc.mu.Unlock()
	bc.bundle++
	id := bc.bundle
	x, unsendable, err := bc.sendBundle(b, id)
	if err != nil {
		return fmt.Errorf("sending the bundle: %w", err)
	}
	if unsendable != nil {
		// Nothing is committed; the open bundle is dropped.
		bc.discard(ctx, id)
		return unsendable
	}
	if err := bc.closed(ctx, b, id, x); err != nil {
		return err
	}
	if beforeCommit != nil {
		beforeCommit()
	}
	return bc.commit(ctx, b, id, x)
}

// bundleXIDs are the xids of a bundle's open request, of its first added
// message and of its close request; the messages' are in between.
type bundleXIDs struct{ open, first, close uint32 }

// sendBundle writes the open request, every message and the close
// request, unless a message cannot be sent (unsendable: nothing more is
// written).
func (bc *bulkConn) sendBundle(b *Batch, id uint32) (x bundleXIDs, unsendable *RefusedError, err error) {
	bc.wmu.Lock()
	defer bc.wmu.Unlock()
	x.open = bc.nextXID()
	_, err = bc.w.Write(controlMessage(id, openflow15.OFPBCT_OPEN_REQUEST, x.open))
	x.first = bc.xid + 1
	var buf []byte
	for i := 0; i < b.Len() && err == nil; i++ {
		xid := bc.nextXID()
		buf = appendOFHeader(buf[:0], openflow15.Type_BundleAddMessage, xid, 0)
		buf = binary.BigEndian.AppendUint32(buf, id)
		buf = binary.BigEndian.AppendUint16(buf, 0)
		buf = binary.BigEndian.AppendUint16(buf, bundleFlags)
		var encErr error
		if buf, encErr = b.Message(buf, i, xid); encErr != nil {
			return x, b.Refuse(nil, i, "could not be encoded: "+encErr.Error()), nil
		}
		if why := Oversize(len(buf) - bundleAddHeadLen); why != "" {
			return x, b.Refuse(nil, i, why), nil
		}
		binary.BigEndian.PutUint16(buf[2:], uint16(len(buf)))
		_, err = bc.w.Write(buf)
	}
	x.close = bc.nextXID()
	if err == nil {
		_, err = bc.w.Write(controlMessage(id, openflow15.OFPBCT_CLOSE_REQUEST, x.close))
	}
	if err == nil {
		err = bc.w.Flush()
	}
	return x, nil, err
}

// closed waits for the close's answer: every message is answered (its
// errors) before the close is. A refused message discards the bundle.
func (bc *bulkConn) closed(ctx context.Context, b *Batch, id uint32, x bundleXIDs) error {
	evs, err := bc.waitFor(ctx, x.close)
	if err != nil {
		return fmt.Errorf("closing the bundle: %w", err)
	}
	if err := controlError(evs, x.open, "open the bundle"); err != nil {
		return err
	}
	if refused := refusedIn(b, evs, x.first, x.close); refused != nil {
		bc.discard(ctx, id)
		return refused
	}
	return controlError(evs, x.close, "close the bundle")
}

// commit sends the commit request and waits for its answer.
func (bc *bulkConn) commit(ctx context.Context, b *Batch, id uint32, x bundleXIDs) error {
	commitXID := bc.nextXID()
	if err := bc.send(controlMessage(id, openflow15.OFPBCT_COMMIT_REQUEST, commitXID)); err != nil {
		return fmt.Errorf("sending the bundle commit: %w", err)
	}
	evs, err := bc.waitFor(ctx, commitXID)
	if err != nil {
		return fmt.Errorf("bundle commit (%d messages): %w", b.Len(), err)
	}
	// Messages that fail only when applied (a flow naming a missing group)
	// are answered during the commit, which then fails as a whole.
	if refused := refusedIn(b, evs, x.first, x.close); refused != nil {
		return refused
	}
	if err := controlError(evs, commitXID, "commit the bundle"); err != nil {
		// Refused without naming a message: still nothing committed.
		return &RefusedError{Messages: b.Len(), Examples: []string{err.Error()}}
	}
	return nil
}

// refusedIn collects the errors answering the bundle's messages (xids
// first..end-1).
func refusedIn(b *Batch, evs []event, first, end uint32) *RefusedError {
	var r *RefusedError
	for _, e := range evs {
		if e.isError && e.xid >= first && e.xid < end {
			r = b.Refuse(r, int(e.xid-first), OpenFlowError(e.errType, e.errCode))
		}
	}
	return r
}

// maxMessage is the longest OpenFlow message (its length is 16 bits).
const maxMessage = 0xffff

// Oversize says why a message of n bytes cannot be in a bundle, or "" if
// it can.
func Oversize(n int) string {
	if n+bundleAddHeadLen <= maxMessage {
		return ""
	}
	return fmt.Sprintf("%d bytes, more than a bundled OpenFlow message holds (%d)", n, maxMessage-bundleAddHeadLen)
}

// controlError is the switch's error answering a bundle control message.
func controlError(evs []event, xid uint32, what string) error {
	for _, e := range evs {
		if e.isError && e.xid == xid {
			return fmt.Errorf("the switch refused to %s: %s", what, OpenFlowError(e.errType, e.errCode))
		}
	}
	return nil
}

// discard drops a closed bundle the switch refused messages of (a failure
// is only logged by the caller's error: the switch drops an uncommitted
// bundle with the connection anyway).
func (bc *bulkConn) discard(ctx context.Context, id uint32) {
	xid := bc.nextXID()
	if bc.send(controlMessage(id, openflow15.OFPBCT_DISCARD_REQUEST, xid)) == nil {
		bc.waitFor(ctx, xid)
	}
}

// controlMessage is a bundle control message.
func controlMessage(id uint32, typ uint16, xid uint32) []byte {
	b := appendOFHeader(nil, openflow15.Type_BundleControl, xid, ofHeaderLen+8)
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint16(b, typ)
	return binary.BigEndian.AppendUint16(b, bundleFlags)
}
