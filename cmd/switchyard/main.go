// Command switchyard is a multi-dataplane Kubernetes service proxy.
package main

import (
	"os"

	"github.com/switchyard-proxy/switchyard/cmd/switchyard/app"
	_ "github.com/switchyard-proxy/switchyard/cmd/switchyard/builtin"
)

func main() { os.Exit(app.Main()) }
