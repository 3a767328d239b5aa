package hns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ownedState is the record of the load balancers this driver created: HNS
// load balancers carry no name or label, so this file is how a restarted
// driver knows which ones are its own. It never touches one that is not
// listed; a lost file leaves old ones behind (safe), never deletes
// another component's.
type ownedState struct {
	Version       int               `json:"version"`
	LoadBalancers map[string]string `json:"loadBalancers"` // HNS ID -> key
}

func loadOwned(path string) (ownedState, error) {
	s := ownedState{Version: 1, LoadBalancers: map[string]string{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("state file %s: %w", path, err)
	}
	if s.LoadBalancers == nil {
		s.LoadBalancers = map[string]string{}
	}
	return s, nil
}

// save writes the record atomically.
func (s ownedState) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".hns-owned-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
