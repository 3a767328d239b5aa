package ofconntest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"antrea.io/libOpenflow/openflow15"
	"antrea.io/libOpenflow/util"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
)

// A Conn's link to the bridge (ofconn.Link and ofconn.MessageSender):
// bundles, dumps and packet-outs.

// memLink is a Conn's link to the bridge.
type memLink struct {
	br   *Bridge
	lost bool
}

func (l *memLink) Broken() bool {
	l.br.mu.Lock()
	defer l.br.mu.Unlock()
	return l.lost
}

func (l *memLink) Close() {
	l.br.mu.Lock()
	l.lost = true
	l.br.mu.Unlock()
}

var errLost = errors.New("in-memory bridge: connection lost")

func (l *memLink) Transact(_ context.Context, b *ofconn.Batch, beforeCommit func()) error {
	l.br.mu.Lock()
	defer l.br.mu.Unlock()
	if l.lost {
		return errLost
	}
	return l.br.transactLocked(b, func(commit func() error) error {
		fault := l.br.fault
		l.br.fault = NoFault
		if beforeCommit != nil {
			beforeCommit()
		}
		if fault == LoseBeforeCommit {
			l.lost = true
			return fmt.Errorf("bundle commit (%d messages): %w", b.Len(), errLost)
		}
		err := commit()
		if err == nil && fault == LoseAfterCommit {
			l.lost = true
			return fmt.Errorf("bundle commit (%d messages): %w", b.Len(), errLost)
		}
		return err
	})
}

// multipart answers a flow or group description request, a group or
// aggregate statistics one, or a switch description one.
func (l *memLink) Multipart(_ context.Context, typ uint16, body []byte, entry func([]byte) error) error {
	l.br.mu.Lock()
	if f := l.br.beforeCount; f != nil && typ == openflow15.MultipartType_AggregateStats {
		l.br.beforeCount = nil
		l.br.mu.Unlock()
		f()
		l.br.mu.Lock()
	}
	defer l.br.mu.Unlock()
	if l.lost {
		return errLost
	}
	var b []byte
	switch typ {
	case openflow15.MultipartType_FlowDesc:
		flows, err := l.br.flowsAsked(body)
		if len(body) >= ofconn.FlowDescRequestLen && binary.BigEndian.Uint64(body[24:]) == ^uint64(0) {
			l.br.reads.FlowLookups++
		} else {
			l.br.reads.FlowScans++
		}
		if err != nil {
			return err
		}
		for _, f := range flows {
			if err := entry(appendFlowDesc(b[:0], f)); err != nil {
				return err
			}
		}
	case openflow15.MultipartType_Desc:
		return entry(ofconn.AppendDesc(b, l.br.version))
	case openflow15.MultipartType_AggregateStats:
		l.br.reads.Aggregates++
		flows, err := l.br.flowsAsked(body)
		if err != nil {
			return err
		}
		return entry(ofconn.AppendAggregateStats(b, len(flows)))
	case openflow15.MultipartType_GroupDesc:
		if len(body) < 4 {
			return refusal{openflow15.ET_BAD_REQUEST, openflow15.BRC_BAD_LEN}
		}
		// group_id: one group (none when the bridge lacks it), or OFPG_ALL.
		id := binary.BigEndian.Uint32(body)
		for _, g := range l.br.sortedGroups() {
			if id != openflow15.OFPG_ALL && g.id != id {
				continue
			}
			if err := entry(appendGroupDesc(b[:0], g)); err != nil {
				return err
			}
		}
	case openflow15.MultipartType_GroupStats:
		// No packet goes through an in-memory bridge: every count is 0,
		// one per bucket, as OVS answers for groups nothing went through.
		for _, g := range l.br.sortedGroups() {
			if err := entry(ofconn.AppendGroupStats(b[:0], ofconn.GroupStats{ID: g.id, BucketPackets: make([]uint64, len(g.bucketIDs))})); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("multipart type %d: %w", typ, errNotModelled)
	}
	return nil
}

// Send takes a packet-out (ofconn.MessageSender), as the switch would
// send its packet; the bridge keeps it for PacketOuts. Anything else is
// not modelled.
func (l *memLink) Send(msg util.Message) error {
	l.br.mu.Lock()
	defer l.br.mu.Unlock()
	if l.lost {
		return errLost
	}
	po, ok := msg.(*openflow15.PacketOut)
	if !ok {
		return fmt.Errorf("%T: %w", msg, errNotModelled)
	}
	l.br.outs = append(l.br.outs, po)
	return nil
}

// flowsAsked is the flows a flow description or aggregate request asks
// for (table, cookie under mask), by table and then by falling priority.
// Under an all-ones mask the cookie is looked up, as OVS looks it up.
// Called with br.mu held.
func (br *Bridge) flowsAsked(body []byte) ([]*memFlow, error) {
	if len(body) < ofconn.FlowDescRequestLen {
		return nil, refusal{openflow15.ET_BAD_REQUEST, openflow15.BRC_BAD_LEN}
	}
	table, cookie, mask := body[0], binary.BigEndian.Uint64(body[16:]), binary.BigEndian.Uint64(body[24:])
	var candidates []*memFlow
	if mask == ^uint64(0) {
		candidates = slices.Clone(br.cookieIndex()[cookie])
	} else {
		candidates = slices.Collect(maps.Values(br.flows))
	}
	candidates = slices.DeleteFunc(candidates, func(f *memFlow) bool {
		return (table != openflow15.OFPTT_ALL && table != f.key.table) || f.cookie&mask != cookie&mask
	})
	slices.SortFunc(candidates, func(a, b *memFlow) int {
		if a.key.table != b.key.table {
			return int(a.key.table) - int(b.key.table)
		}
		return int(b.key.priority) - int(a.key.priority)
	})
	return candidates, nil
}

// cookieIndex returns the flows by cookie, built once per commit.
func (br *Bridge) cookieIndex() map[uint64][]*memFlow {
	if br.byCookie == nil {
		br.byCookie = make(map[uint64][]*memFlow, len(br.flows))
		for _, f := range br.flows {
			br.byCookie[f.cookie] = append(br.byCookie[f.cookie], f)
		}
	}
	return br.byCookie
}
