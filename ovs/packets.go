package ovs

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
)

// This file crafts the packets the controller answers with: a TCP reset
// or an ICMP/ICMPv6 port unreachable for a frontend without endpoints
// (what upstream's "reject" sends), and an IPv6 neighbour advertisement
// for the bridge's own addresses.

// frame is the little of a received Ethernet frame the replies need.
type frame struct {
	src, dst net.HardwareAddr
	ipHeader []byte // the whole IP header (v4 with options)
	l4       []byte // what follows it
	srcIP    netip.Addr
	dstIP    netip.Addr
	proto    uint8
	v6       bool
}

const (
	etherIPv4 = 0x0800
	etherIPv6 = 0x86dd
)

func parseFrame(b []byte) (*frame, error) {
	if len(b) < 14 {
		return nil, errors.New("short frame")
	}
	f := &frame{dst: net.HardwareAddr(b[0:6]), src: net.HardwareAddr(b[6:12])}
	et := binary.BigEndian.Uint16(b[12:14])
	p := b[14:]
	switch et {
	case etherIPv4:
		if len(p) < 20 {
			return nil, errors.New("short IPv4 header")
		}
		ihl := int(p[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(p[2:4]))
		if ihl < 20 || len(p) < ihl || total < ihl {
			return nil, errors.New("bad IPv4 header")
		}
		if total < len(p) {
			p = p[:total]
		}
		f.ipHeader, f.l4, f.proto = p[:ihl], p[ihl:], p[9]
		f.srcIP, _ = netip.AddrFromSlice(p[12:16])
		f.dstIP, _ = netip.AddrFromSlice(p[16:20])
	case etherIPv6:
		if len(p) < 40 {
			return nil, errors.New("short IPv6 header")
		}
		plen := int(binary.BigEndian.Uint16(p[4:6]))
		if 40+plen < len(p) {
			p = p[:40+plen]
		}
		f.v6, f.ipHeader, f.l4, f.proto = true, p[:40], p[40:], p[6]
		f.srcIP, _ = netip.AddrFromSlice(p[8:24])
		f.dstIP, _ = netip.AddrFromSlice(p[24:40])
	default:
		return nil, errors.New("not IP")
	}
	return f, nil
}

// checksum is the Internet checksum of data with an initial sum.
func checksum(sum uint32, data []byte) uint16 {
	for i := 0; i+1 < len(data); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(data[i:]))
	}
	if len(data)%2 == 1 {
		sum += uint32(data[len(data)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// pseudoSum is the sum of the L4 pseudo header.
func pseudoSum(src, dst netip.Addr, proto uint8, length int) uint32 {
	var sum uint32
	for _, a := range [][]byte{src.AsSlice(), dst.AsSlice()} {
		for i := 0; i+1 < len(a); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(a[i:]))
		}
	}
	return sum + uint32(proto) + uint32(length)
}

// ipPacket wraps an L4 payload in an IP header from src to dst.
func ipPacket(src, dst netip.Addr, proto uint8, l4 []byte) []byte {
	if src.Is4() {
		h := make([]byte, 20, 20+len(l4))
		h[0], h[8], h[9] = 0x45, 64, proto
		binary.BigEndian.PutUint16(h[2:], uint16(20+len(l4)))
		copy(h[12:16], src.AsSlice())
		copy(h[16:20], dst.AsSlice())
		binary.BigEndian.PutUint16(h[10:], checksum(0, h))
		return append(h, l4...)
	}
	h := make([]byte, 40, 40+len(l4))
	h[0], h[6], h[7] = 0x60, proto, 64
	if proto == 58 {
		h[7] = 255 // neighbour discovery requires hop limit 255
	}
	binary.BigEndian.PutUint16(h[4:], uint16(len(l4)))
	copy(h[8:24], src.AsSlice())
	copy(h[24:40], dst.AsSlice())
	return append(h, l4...)
}

func ethernet(dst, src net.HardwareAddr, etherType uint16, payload []byte) []byte {
	b := make([]byte, 14, 14+len(payload))
	copy(b[0:6], dst)
	copy(b[6:12], src)
	binary.BigEndian.PutUint16(b[12:], etherType)
	return append(b, payload...)
}

// rejectReply answers a packet to a frontend without endpoints: TCP gets a
// reset, anything else an ICMP(v6) port unreachable. The reply comes from
// the frontend address. It returns nil for packets that get no answer (a
// reset, or an ICMP error, is never answered).
func rejectReply(f *frame) []byte {
	et := uint16(etherIPv4)
	if f.v6 {
		et = etherIPv6
	}
	var proto uint8
	var l4 []byte
	switch {
	case f.proto == 6 && len(f.l4) >= 20:
		flags := f.l4[13]
		if flags&0x04 != 0 { // RST: never answer
			return nil
		}
		seg := make([]byte, 20)
		copy(seg[0:2], f.l4[2:4]) // ports swapped
		copy(seg[2:4], f.l4[0:2])
		seq := binary.BigEndian.Uint32(f.l4[4:8])
		ack := binary.BigEndian.Uint32(f.l4[8:12])
		dataLen := uint32(len(f.l4) - int(f.l4[12]>>4)*4)
		if flags&0x02 != 0 { // SYN
			dataLen++
		}
		if flags&0x01 != 0 { // FIN
			dataLen++
		}
		seg[12] = 5 << 4
		if flags&0x10 != 0 { // ACK set: RST with their ack as our sequence
			binary.BigEndian.PutUint32(seg[4:], ack)
			seg[13] = 0x04
		} else {
			binary.BigEndian.PutUint32(seg[8:], seq+dataLen)
			seg[13] = 0x14
		}
		proto, l4 = 6, seg
		binary.BigEndian.PutUint16(seg[16:], checksum(pseudoSum(f.dstIP, f.srcIP, 6, len(seg)), seg))
	case !f.v6 && f.proto == 1 && isICMPError(f.l4, false), f.v6 && f.proto == 58 && isICMPError(f.l4, true):
		return nil
	case !f.v6:
		quote := append(append([]byte{}, f.ipHeader...), f.l4[:min(8, len(f.l4))]...)
		msg := append([]byte{3, 3, 0, 0, 0, 0, 0, 0}, quote...)
		binary.BigEndian.PutUint16(msg[2:], checksum(0, msg))
		proto, l4 = 1, msg
	default:
		quote := append(append([]byte{}, f.ipHeader...), f.l4...)
		if max := 1280 - 40 - 8; len(quote) > max {
			quote = quote[:max]
		}
		msg := append([]byte{1, 4, 0, 0, 0, 0, 0, 0}, quote...)
		binary.BigEndian.PutUint16(msg[2:], checksum(pseudoSum(f.dstIP, f.srcIP, 58, len(msg)), msg))
		proto, l4 = 58, msg
	}
	return ethernet(f.src, f.dst, et, ipPacket(f.dstIP, f.srcIP, proto, l4))
}

func isICMPError(l4 []byte, v6 bool) bool {
	if len(l4) == 0 {
		return true
	}
	if v6 {
		return l4[0] < 128
	}
	switch l4[0] {
	case 3, 4, 5, 11, 12:
		return true
	}
	return false
}

// neighborAdvert answers a neighbour solicitation with the router's MAC
// (router, solicited, override): the bridge routes every address. It
// returns nil for duplicate address detection (no source address) and for
// a requester asking about its own address.
func neighborAdvert(f *frame, mac net.HardwareAddr) []byte {
	if !f.v6 || f.proto != 58 || len(f.l4) < 24 || f.l4[0] != 135 {
		return nil
	}
	target, _ := netip.AddrFromSlice(f.l4[8:24])
	if f.srcIP.IsUnspecified() || target == f.srcIP {
		return nil
	}
	na := make([]byte, 32)
	na[0] = 136
	na[4] = 0xe0 // router, solicited, override
	copy(na[8:24], target.AsSlice())
	na[24], na[25] = 2, 1 // target link-layer address option
	copy(na[26:32], mac)
	binary.BigEndian.PutUint16(na[2:], checksum(pseudoSum(target, f.srcIP, 58, len(na)), na))
	return ethernet(f.src, mac, etherIPv6, ipPacket(target, f.srcIP, 58, na))
}
