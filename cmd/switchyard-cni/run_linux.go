//go:build linux

package main

import (
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/switchyard-proxy/switchyard/ovs/cni"
)

// Version is set at build time (-ldflags "-X main.Version=v1.2.3").
var Version = "dev"

func run() {
	skel.PluginMainFuncs(cni.Funcs(), version.All, "switchyard-cni "+Version)
}
