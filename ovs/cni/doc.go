// Package cni is switchyard-cni, the CNI plugin of the OVS dataplane: it
// gives a pod a veth whose host end is a port of switchyard's bridge,
// addresses from the node's pod CIDRs (host-local style allocations kept
// on disk), and a default route through the bridge's gateway. The port's
// OVSDB external_ids (switchyard.io/pod-ips, pod-mac, ...) are how the
// OVS driver learns the pod: they, and the node file, are the contract in
// ovs/podport, the one package the driver and the plugin share.
//
// What the plugin needs of the node comes from two places: the network
// configuration (bridge, OVS run directory, where switchyard writes the
// node file, where allocations live) and the node file, which switchyard
// writes once it knows the node's spec.podCIDRs (podport.NodeNetwork). DEL needs
// only the configuration, so it works while switchyard is down.
package cni
