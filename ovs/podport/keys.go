package podport

import (
	"crypto/sha256"
	"encoding/hex"
)

// External IDs the plugin writes on a pod's OVSDB interface; the OVS
// driver reads the first three (ovs/engine/ports.go).
const (
	KeyPodIPs      = "switchyard.io/pod-ips"      // comma-separated, one per family
	KeyPodMAC      = "switchyard.io/pod-mac"      // the pod side's MAC
	KeyPodName     = "switchyard.io/pod"          // namespace/name
	KeyContainerID = "switchyard.io/container-id" // CNI_CONTAINERID
	KeyIfName      = "switchyard.io/ifname"       // CNI_IFNAME
	// KeyProgrammed is written by the OVS driver once the pod's flows are
	// installed; ADD waits for it.
	KeyProgrammed = "switchyard.io/programmed"
)

// HostVethPrefix starts the name of every pod veth's host end; the host's
// nftables table drops what arrives on them (see ovs/hostnet).
const HostVethPrefix = "syp"

// HostVethName is the host end's name of a container's interface: the
// prefix and a hash of container ID and interface name, so DEL finds it
// without any state.
func HostVethName(containerID, ifname string) string {
	h := sha256.Sum256([]byte(containerID + "/" + ifname))
	return HostVethPrefix + hex.EncodeToString(h[:])[:12]
}

// NetworkName is the name of the network `switchyard install` configures
// (its allocations live in <ipamDir>/<name>), and PluginType the plugin's
// type: the name of its binary in the CNI bin directory.
const (
	NetworkName = "switchyard"
	PluginType  = "switchyard"
)
