package hostnet

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestIPv6ForwardingKeepsRouterAdvertisements: in a namespace of its own,
// an uplink whose IPv6 default route came from a router advertisement
// (accept_ra 1), another link without one, and a pod's port. Turning IPv6
// forwarding on gives the uplink accept_ra 2 and leaves the other two,
// and the default for new interfaces, as they were.
func TestIPv6ForwardingKeepsRouterAdvertisements(t *testing.T) {
	h, err := Open(testNamespace(t, "ra"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, link := range []string{"uplink", "other", "sypod1"} {
		if err := h.nl.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: link}, PeerName: link + "-peer"}); err != nil {
			t.Fatal(err)
		}
		for _, end := range []string{link, link + "-peer"} {
			l, _ := h.nl.LinkByName(end)
			if err := h.nl.LinkSetUp(l); err != nil {
				t.Fatal(err)
			}
		}
	}
	sysctl := func(key string) string {
		var v []byte
		_ = h.inNS(func() (err error) { v, err = os.ReadFile("/proc/sys/" + key); return err })
		return strings.TrimSpace(string(v))
	}
	if err := h.inNS(func() error {
		for _, l := range []string{"uplink", "other", "sypod1", "default"} {
			if err := setSysctl("net/ipv6/conf/"+l+"/accept_ra", "1"); err != nil {
				return err
			}
		}
		return setSysctl("net/ipv6/conf/all/forwarding", "0")
	}); err != nil {
		t.Fatal(err)
	}
	// The default route the uplink learned from a router advertisement
	// (as the kernel files it: protocol ra, via the router's link-local
	// address).
	uplink, _ := h.nl.LinkByName("uplink")
	_, def, _ := net.ParseCIDR("::/0")
	if err := h.nl.RouteAdd(&netlink.Route{LinkIndex: uplink.Attrs().Index, Dst: def, Gw: net.ParseIP("fe80::1"), Protocol: unix.RTPROT_RA}); err != nil {
		t.Fatal(err)
	}

	if err := h.sysctls(Config{Addresses: []netip.Prefix{netip.MustParsePrefix("fd00:10:244::1/64")}}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, key := range []string{"all/forwarding", "uplink/accept_ra", "other/accept_ra", "sypod1/accept_ra", "default/accept_ra"} {
		got[key] = sysctl("net/ipv6/conf/" + key)
	}
	want := map[string]string{"all/forwarding": "1", "uplink/accept_ra": "2", "other/accept_ra": "1", "sypod1/accept_ra": "1", "default/accept_ra": "1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after IPv6 forwarding went on: %v\nwant %v", got, want)
	}
}
