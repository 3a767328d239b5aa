package hns

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"
)

// ownedState is the record of the load balancers this driver created: HNS
// load balancers carry no name or label, so this file is how a restarted
// driver knows which ones are its own. It never touches one that is not
// listed; a lost file leaves old ones behind (safe), never deletes
// another component's.
//
// The file is a journal of JSON lines: a header, then one line per load
// balancer created ({"add":ID,"key":K}) or deleted ({"del":ID}). A change
// appends its lines (one write, however many Services there are); the
// file is rewritten compactly when loaded and when deletions make up most
// of it. A torn last line (a crash mid-write) is ignored.
type ownedState struct {
	LoadBalancers map[string]string // HNS ID -> key
	// Asked is, per HNS ID, the digest of what the driver set beyond what
	// HNS is known to echo (identity.go); absent in records written before
	// it was kept.
	Asked map[string]string

	pending []ownedLine // appended by the next save
	lines   int         // lines in the file after the header
}

type ownedLine struct {
	Add   string `json:"add,omitempty"`
	Key   string `json:"key,omitempty"`
	Asked string `json:"asked,omitempty"`
	Del   string `json:"del,omitempty"`
}

type ownedHeader struct {
	Switchyard string `json:"switchyard"` // "hns-owned"
	Version    int    `json:"version"`
}

const ownedFormat = 2

func (s *ownedState) add(id, key, asked string) {
	s.LoadBalancers[id] = key
	s.Asked[id] = asked
	s.pending = append(s.pending, ownedLine{Add: id, Key: key, Asked: asked})
}

func (s *ownedState) remove(id string) {
	if _, ok := s.LoadBalancers[id]; ok {
		delete(s.LoadBalancers, id)
		delete(s.Asked, id)
		s.pending = append(s.pending, ownedLine{Del: id})
	}
}

// loadOwned reads the journal and rewrites it compactly.
func loadOwned(path string) (ownedState, error) {
	s := ownedState{LoadBalancers: map[string]string{}, Asked: map[string]string{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		if n == 1 {
			var h ownedHeader
			if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Switchyard != "hns-owned" || h.Version != ownedFormat {
				return s, fmt.Errorf("state file %s: not a switchyard HNS ownership record (format %d)", path, ownedFormat)
			}
			continue
		}
		var l ownedLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			// Only a torn last line is expected; anything after it is lost.
			klog.InfoS("HNS ownership record: stopped at an unreadable line; load balancers recorded after it are left alone",
				"file", path, "line", n, "err", err)
			break
		}
		switch {
		case l.Add != "":
			s.LoadBalancers[l.Add] = l.Key
			if l.Asked != "" {
				s.Asked[l.Add] = l.Asked
			}
		case l.Del != "":
			delete(s.LoadBalancers, l.Del)
			delete(s.Asked, l.Del)
		}
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("state file %s: %w", path, err)
	}
	return s, s.compact(path)
}

// saveIfChanged appends what changed since the last save; an in-place
// update of a load balancer keeps its ID and writes nothing.
func (s *ownedState) saveIfChanged(path string) error {
	if len(s.pending) == 0 {
		return nil
	}
	if s.lines+len(s.pending) > 2*len(s.LoadBalancers)+64 {
		return s.compact(path)
	}
	var buf bytes.Buffer
	for _, l := range s.pending {
		b, _ := json.Marshal(l)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		return s.compact(path) // removed under us: write it whole
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	s.lines += len(s.pending)
	s.pending = nil
	return nil
}

// compact rewrites the file atomically with one line per load balancer.
func (s *ownedState) compact(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	h, _ := json.Marshal(ownedHeader{Switchyard: "hns-owned", Version: ownedFormat})
	buf.Write(h)
	buf.WriteByte('\n')
	for id, key := range s.LoadBalancers {
		b, _ := json.Marshal(ownedLine{Add: id, Key: key, Asked: s.Asked[id]})
		buf.Write(b)
		buf.WriteByte('\n')
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".hns-owned-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	s.lines = len(s.LoadBalancers)
	s.pending = nil
	return nil
}
