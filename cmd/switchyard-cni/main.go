// Command switchyard-cni is the CNI plugin of switchyard's OVS dataplane
// (package cni): a container runtime runs it with CNI_COMMAND ADD, DEL,
// CHECK or VERSION and the network configuration on stdin.
package main

func main() { run() }
