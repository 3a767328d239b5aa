package graph

import (
	"encoding/json"
	"fmt"
	"net/netip"
)

// IPFamily is IPv4 or IPv6.
type IPFamily uint8

// The two IP families.
const (
	IPv4 IPFamily = 1
	IPv6 IPFamily = 2
)

// FamilyOf returns the family of ip (IPv4-mapped IPv6 counts as IPv4).
func FamilyOf(ip netip.Addr) IPFamily {
	if ip.Unmap().Is4() {
		return IPv4
	}
	return IPv6
}

// FirstOfFamily returns the first address of a family in ips.
func FirstOfFamily(ips []netip.Addr, f IPFamily) (netip.Addr, bool) {
	for _, ip := range ips {
		if FamilyOf(ip) == f {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// String renders the family as Kubernetes spells it.
func (f IPFamily) String() string {
	switch f {
	case IPv4:
		return "IPv4"
	case IPv6:
		return "IPv6"
	}
	return fmt.Sprintf("IPFamily(%d)", uint8(f))
}

// ParseIPFamily reads "IPv4" or "IPv6".
func ParseIPFamily(s string) (IPFamily, error) {
	switch s {
	case "IPv4":
		return IPv4, nil
	case "IPv6":
		return IPv6, nil
	}
	return 0, fmt.Errorf("unknown IP family %q", s)
}

// FamilySet is a set of IP families.
type FamilySet uint8

// Has reports whether f is in the set.
func (s FamilySet) Has(f IPFamily) bool { return s&FamilySet(f) != 0 }

// With returns the set with f added.
func (s FamilySet) With(f IPFamily) FamilySet { return s | FamilySet(f) }

// List returns the families in the set, IPv4 first.
func (s FamilySet) List() []IPFamily {
	var out []IPFamily
	for _, f := range []IPFamily{IPv4, IPv6} {
		if s.Has(f) {
			out = append(out, f)
		}
	}
	return out
}

// MarshalJSON renders the set as a list of family names.
func (s FamilySet) MarshalJSON() ([]byte, error) {
	names := []string{}
	for _, f := range s.List() {
		names = append(names, f.String())
	}
	return json.Marshal(names)
}

// UnmarshalJSON reads a list of family names.
func (s *FamilySet) UnmarshalJSON(b []byte) error {
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return err
	}
	*s = 0
	for _, n := range names {
		f, err := ParseIPFamily(n)
		if err != nil {
			return err
		}
		*s = s.With(f)
	}
	return nil
}
