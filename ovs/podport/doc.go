// Package podport is the contract between the OVS driver (ovs) and its
// CNI plugin (ovs/cni), the only package both import: the external_ids
// keys the plugin writes on a pod's OVSDB interface and the driver reads
// (and the programmed mark the driver writes back, which ADD waits for),
// the names of pod veths' host ends and of the network, and the node file
// in which the driver tells the plugin the node's pod CIDRs.
package podport
