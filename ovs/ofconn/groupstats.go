package ofconn

import (
	"context"
	"encoding/binary"
	"fmt"

	"antrea.io/libOpenflow/openflow15"
)

// GroupStats is what OVS counted for one group: the packets that went
// through it and through each of its buckets, in the group's bucket order
// (OpenFlow 1.5's ofp_group_stats and ofp_bucket_counter).
type GroupStats struct {
	ID      uint32
	Packets uint64
	Bytes   uint64
	// BucketPackets are each bucket's packets, in the group's bucket
	// order (the order of GroupInfo.BucketIDs).
	BucketPackets []uint64
}

// The layout of ofp_group_stats: length, pad, group_id, ref_count, pad,
// packet_count, byte_count, duration_sec, duration_nsec; then 16 bytes a
// bucket (packet_count, byte_count).
const (
	groupStatsFixedLen  = 40
	bucketCounterLen    = 16
	mpGroupStatsRequest = 8 // group_id, pad
)

// DumpGroupStats reads every group's counters; expect is how many groups
// the caller expects (the list's first capacity).
func (c *Conn) DumpGroupStats(ctx context.Context, expect int) ([]GroupStats, error) {
	body := binary.BigEndian.AppendUint32(make([]byte, 0, mpGroupStatsRequest), openflow15.OFPG_ALL)
	body = binary.BigEndian.AppendUint32(body, 0)
	out := make([]GroupStats, 0, expect)
	err := c.multipart(ctx, openflow15.MultipartType_GroupStats, body, func(entry []byte) error {
		g, err := groupStats(entry)
		out = append(out, g)
		return err
	})
	return out, err
}

// groupStats reads one ofp_group_stats.
func groupStats(entry []byte) (GroupStats, error) {
	if len(entry) < groupStatsFixedLen || (len(entry)-groupStatsFixedLen)%bucketCounterLen != 0 {
		return GroupStats{}, fmt.Errorf("group statistics of %d bytes", len(entry))
	}
	g := GroupStats{ID: binary.BigEndian.Uint32(entry[4:]), Packets: binary.BigEndian.Uint64(entry[16:]),
		Bytes: binary.BigEndian.Uint64(entry[24:])}
	for b := entry[groupStatsFixedLen:]; len(b) > 0; b = b[bucketCounterLen:] {
		g.BucketPackets = append(g.BucketPackets, binary.BigEndian.Uint64(b))
	}
	return g, nil
}

// AppendGroupStats encodes g as ofp_group_stats (for a stand-in bridge).
func AppendGroupStats(b []byte, g GroupStats) []byte {
	n := groupStatsFixedLen + bucketCounterLen*len(g.BucketPackets)
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint32(b, g.ID)
	b = binary.BigEndian.AppendUint32(b, 0) // ref_count
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint64(b, g.Packets)
	b = binary.BigEndian.AppendUint64(b, g.Bytes)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // duration
	for _, p := range g.BucketPackets {
		b = binary.BigEndian.AppendUint64(b, p)
		b = binary.BigEndian.AppendUint64(b, 0) // bytes: not kept per bucket here
	}
	return b
}
