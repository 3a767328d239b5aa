//go:build linux

package cni

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/plugins/ipam/host-local/backend/allocator"
	"github.com/containernetworking/plugins/plugins/ipam/host-local/backend/disk"
	"github.com/switchyard-proxy/switchyard/ovs/podport"
)

// addressBook hands out pod addresses from the node's pod CIDRs, one per
// family, through host-local's allocator and its on-disk store (so
// allocations survive restarts and reboots, and a crash-looping pod is not
// handed the same address again at once).
type addressBook struct {
	store  *disk.Store
	ranges []allocator.RangeSet
}

func openAddressBook(c *NetConf, n podport.NodeNetwork) (*addressBook, error) {
	store, err := disk.New(c.Name, c.IPAMDir)
	if err != nil {
		return nil, fmt.Errorf("address store in %s: %w", c.IPAMDir, err)
	}
	b := &addressBook{store: store}
	for i, p := range n.PodCIDRs {
		rs := allocator.RangeSet{{
			Subnet:  types.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())},
			Gateway: net.IP(n.Gateways[i].AsSlice()),
		}}
		if err := rs.Canonicalize(); err != nil {
			store.Close()
			return nil, fmt.Errorf("pod CIDR %s: %w", p, err)
		}
		b.ranges = append(b.ranges, rs)
	}
	return b, nil
}

func (b *addressBook) close() { b.store.Close() }

// allocate takes one address per pod CIDR for the container's interface,
// the requested one of a family when there is one. On failure nothing
// stays taken.
func (b *addressBook) allocate(id, ifname string, requested []netip.Addr) ([]*current.IPConfig, error) {
	var out []*current.IPConfig
	used := make([]bool, len(requested))
	for i, rs := range b.ranges {
		var want net.IP
		for j, r := range requested {
			if !used[j] && (r.Is4() == (rs[0].Subnet.IP.To4() != nil)) {
				want, used[j] = net.IP(r.AsSlice()), true
				break
			}
		}
		ipc, err := allocator.NewIPAllocator(&rs, b.store, i).Get(id, ifname, want)
		if err != nil {
			b.release(id, ifname)
			code := ErrNoFreeAddress
			if want != nil {
				code = ErrAddressTaken
			} else if !strings.Contains(err.Error(), "no IP addresses available") {
				code = types.ErrIOFailure
			}
			return nil, failure(code, fmt.Sprintf("allocating an address in %s", (*net.IPNet)(&rs[0].Subnet)), err)
		}
		out = append(out, ipc)
	}
	for j, r := range requested {
		if !used[j] {
			b.release(id, ifname)
			return nil, failure(ErrAddressTaken, fmt.Sprintf("requested address %s is in none of the node's pod CIDRs", r), nil)
		}
	}
	return out, nil
}

// release gives back every address of the container's interface; none is
// no error.
func (b *addressBook) release(id, ifname string) error {
	b.store.Lock()
	defer b.store.Unlock()
	return b.store.ReleaseByID(id, ifname)
}

// has lists the addresses the store holds for the interface.
func (b *addressBook) has(id, ifname string) []netip.Addr {
	var out []netip.Addr
	for _, ip := range b.store.GetByID(id, ifname) {
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	return out
}
