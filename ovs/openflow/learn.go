package openflow

import (
	"fmt"
	"strings"

	"antrea.io/libOpenflow/openflow15"
	"antrea.io/ofnet/ofctrl"
)

// Learn adds or refreshes a flow in another table built from the packet.
type Learn struct {
	Table         uint8
	Priority      uint16
	IdleTimeout   uint16
	HardTimeout   uint16
	Cookie        uint64
	DeleteLearned bool
	Specs         []LearnSpec
}

// LearnSpec is one part of the learned flow.
type LearnSpec struct {
	// Load makes it an action of the learned flow (load into Field);
	// otherwise it is a match on Field.
	Load bool
	// Field is the NXM name of the matched or loaded field, with the bit
	// range Start..Start+Bits-1; TextName, when set, is the ovs-ofctl name
	// used for a match on a value ("eth_type").
	Field    string
	TextName string
	Start    uint16
	Bits     uint16
	// From is the source field (NXM name, same range rules); empty means
	// Value. For a match, From == Field copies the packet's own field.
	From      string
	FromStart uint16
	Value     uint64
}

func fieldRange(name string, start, bits, whole uint16) string {
	if start == 0 && bits == whole {
		return name + "[]"
	}
	return fmt.Sprintf("%s[%d..%d]", name, start, start+bits-1)
}

// fieldBits returns the width of an NXM field.
func fieldBits(name string) (uint16, error) {
	f, err := openflow15.FindFieldHeaderByName(name, false)
	if err != nil {
		return 0, err
	}
	return uint16(f.Length) * 8, nil
}

func (s LearnSpec) text() string {
	whole, _ := fieldBits(s.Field)
	dst := fieldRange(s.Field, s.Start, s.Bits, whole)
	switch {
	case s.Load && s.From == "":
		return fmt.Sprintf("load:0x%x->%s", s.Value, dst)
	case s.Load:
		w, _ := fieldBits(s.From)
		return fmt.Sprintf("load:%s->%s", fieldRange(s.From, s.FromStart, s.Bits, w), dst)
	case s.From == "":
		return fmt.Sprintf("%s=0x%x", s.TextName, s.Value)
	case s.From == s.Field && s.FromStart == s.Start:
		return dst
	default:
		w, _ := fieldBits(s.From)
		return fmt.Sprintf("%s=%s", dst, fieldRange(s.From, s.FromStart, s.Bits, w))
	}
}

func (l Learn) Text() string {
	parts := []string{fmt.Sprintf("table=%d", l.Table)}
	if l.IdleTimeout != 0 {
		parts = append(parts, fmt.Sprintf("idle_timeout=%d", l.IdleTimeout))
	}
	if l.HardTimeout != 0 {
		parts = append(parts, fmt.Sprintf("hard_timeout=%d", l.HardTimeout))
	}
	parts = append(parts, fmt.Sprintf("priority=%d", l.Priority))
	if l.DeleteLearned {
		parts = append(parts, "delete_learned")
	}
	parts = append(parts, fmt.Sprintf("cookie=0x%x", l.Cookie))
	for _, s := range l.Specs {
		parts = append(parts, s.text())
	}
	return "learn(" + strings.Join(parts, ",") + ")"
}

// valueBytes renders v right-aligned in the width a learn spec needs.
func valueBytes(v uint64, bits uint16) []byte {
	n := 2 * int((bits+15)/16)
	b := make([]byte, n)
	for i := n - 1; i >= 0 && v > 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

func (l Learn) wire(b []byte) ([]byte, error) { return viaLibOpenflow(b, l) }

func (l Learn) of() (openflow15.Action, error) {
	fl := ofctrl.NewLearnAction(l.Table, l.Priority, l.IdleTimeout, l.HardTimeout, 0, 0, l.Cookie)
	if l.DeleteLearned {
		fl.DeleteLearnedFlowsAfterDeletion()
	}
	for _, s := range l.Specs {
		dst := &ofctrl.LearnField{Name: s.Field, Start: s.Start}
		var src *ofctrl.LearnField
		var val []byte
		if s.From == "" {
			val = valueBytes(s.Value, s.Bits)
		} else {
			src = &ofctrl.LearnField{Name: s.From, Start: s.FromStart}
		}
		var err error
		if s.Load {
			err = fl.AddLoadAction(dst, s.Bits, src, val)
		} else {
			err = fl.AddMatch(dst, s.Bits, src, val)
		}
		if err != nil {
			return nil, fmt.Errorf("learn spec %s: %w", s.text(), err)
		}
	}
	return fl.GetActionMessage(), nil
}
