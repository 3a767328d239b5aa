// Command switchyard-file-export is switchyard with one extra dataplane
// driver, built outside the switchyard module: it shows how a third party
// registers a driver and reuses switchyard's command, flags and servers.
package main

import (
	"os"

	"github.com/switchyard-proxy/switchyard/cmd/switchyard/app"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

func init() {
	dataplanes.Register("file-export", &Factory{})
}

func main() { os.Exit(app.Main()) }
