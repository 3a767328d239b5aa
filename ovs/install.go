package ovs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/switchyard-proxy/switchyard/internal/atomicfile"
	"github.com/switchyard-proxy/switchyard/ovs/podport"
	"k8s.io/klog/v2"
)

// ConfListName is the CNI network configuration `switchyard install`
// writes in the CNI configuration directory.
const ConfListName = "10-switchyard.conflist"

// PortmapType is the CNI type (and binary name) under which `switchyard
// install` installs containernetworking's portmap plugin, chained after
// switchyard-cni for pods' hostPorts (the runtime passes them as the
// portMappings capability), as Antrea's configuration chains it. Its own
// name leaves a portmap the node already has alone.
const PortmapType = "switchyard-portmap"

// confList is the network configuration for switchyard-cni: what DEL
// needs is here (bridge, OVS, allocations), what only switchyard knows is
// in the node file. With portmap, the portmap plugin follows it.
func confList(o Options, portmap bool) ([]byte, error) {
	plugins := []map[string]any{{
		"type": podport.PluginType, "bridge": o.Bridge, "ovsRunDir": o.RunDir,
		"nodeFile": o.NodeFile, "ipamDir": o.IPAMDir,
	}}
	if portmap {
		plugins = append(plugins, map[string]any{"type": PortmapType, "capabilities": map[string]bool{"portMappings": true}, "snat": true})
	}
	b, err := json.MarshalIndent(map[string]any{
		"cniVersion": "1.0.0",
		"name":       podport.NetworkName,
		"plugins":    plugins,
	}, "", "  ")
	return append(b, '\n'), err
}

// cniBinary is the switchyard-cni binary to install: --ovs-cni-binary,
// else the one next to the running switchyard.
func cniBinary(o Options) (string, error) {
	if o.CNIBinary != "" {
		return o.CNIBinary, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(self), "switchyard-cni"), nil
}

// installCNI puts switchyard-cni into the CNI bin directory (as
// "switchyard", its type), and the portmap plugin found next to it (as
// PortmapType) when there is one, and the network configuration into the
// CNI configuration directory, each by writing a temporary file and
// renaming it, so a runtime never runs a half-copied plugin or reads half
// a file. Without portmap, pods' hostPorts are not served (logged).
func installCNI(o Options) error {
	src, err := cniBinary(o)
	if err != nil {
		return err
	}
	if err := installBinary(src, filepath.Join(o.CNIBinDir, podport.PluginType)); err != nil {
		return fmt.Errorf("switchyard-cni: %w (see --ovs-cni-binary)", err)
	}
	portmap := filepath.Join(filepath.Dir(src), PortmapType)
	hasPortmap := true
	if err := installBinary(portmap, filepath.Join(o.CNIBinDir, PortmapType)); errors.Is(err, os.ErrNotExist) {
		hasPortmap = false
		klog.InfoS("No portmap plugin next to switchyard-cni: pods' hostPorts are not served", "looked for", portmap)
	} else if err != nil {
		return fmt.Errorf("portmap: %w", err)
	}
	conf, err := confList(o, hasPortmap)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(o.CNIConfDir, ConfListName), bytes.NewReader(conf), 0o644); err != nil {
		return err
	}
	klog.InfoS("Installed switchyard-cni", "binary", filepath.Join(o.CNIBinDir, podport.PluginType), "config", filepath.Join(o.CNIConfDir, ConfListName))
	return nil
}

// uninstallCNI removes what installCNI wrote: the configuration only if it
// is still switchyard's, the plugin binaries.
func uninstallCNI(o Options) error {
	conf := filepath.Join(o.CNIConfDir, ConfListName)
	b, err := os.ReadFile(conf)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		var c struct {
			Name    string `json:"name"`
			Plugins []struct {
				Type string `json:"type"`
			} `json:"plugins"`
		}
		if json.Unmarshal(b, &c) == nil && c.Name == podport.NetworkName && len(c.Plugins) > 0 && c.Plugins[0].Type == podport.PluginType {
			if err := removeFile(conf); err != nil {
				return err
			}
		} else {
			klog.InfoS("Leaving a CNI configuration that is not switchyard's", "file", conf)
		}
	}
	return errors.Join(removeFile(filepath.Join(o.CNIBinDir, podport.PluginType)), removeFile(filepath.Join(o.CNIBinDir, PortmapType)))
}

// installBinary copies the executable src to dst atomically.
func installBinary(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return atomicfile.Write(dst, in, 0o755)
}
