package ofconn

import (
	"bytes"
	"context"
	"fmt"

	"antrea.io/libOpenflow/openflow15"
)

// An ofp_desc (OFPMP_DESC's reply body, OpenFlow 1.5 §7.3.5.1): four
// 256-byte strings and a 32-byte serial number, each NUL-padded.
const (
	descStrLen  = 256
	descLen     = 4*descStrLen + 32
	swDescStart = 2 * descStrLen // after mfr_desc and hw_desc
)

// SoftwareVersion asks the switch for its software description
// (OFPMP_DESC's sw_desc). Open vSwitch answers with its version, e.g.
// "3.1.0".
func (c *Conn) SoftwareVersion(ctx context.Context) (string, error) {
	var sw string
	err := c.multipart(ctx, openflow15.MultipartType_Desc, nil, func(b []byte) error {
		if len(b) < descLen {
			return fmt.Errorf("a switch description of %d bytes, want %d", len(b), descLen)
		}
		field := b[swDescStart : swDescStart+descStrLen]
		if i := bytes.IndexByte(field, 0); i >= 0 {
			field = field[:i]
		}
		sw = string(field)
		return nil
	})
	return sw, err
}

// AppendDesc encodes an ofp_desc whose sw_desc is sw (for a stand-in
// bridge).
func AppendDesc(b []byte, sw string) []byte {
	desc := make([]byte, descLen)
	copy(desc[swDescStart:swDescStart+descStrLen-1], sw)
	return append(b, desc...)
}
