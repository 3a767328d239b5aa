package hns

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/switchyard-proxy/switchyard/internal/atomicfile"
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
// appends its lines (one write, however many Services there are) and
// flushes them to disk; the file is rewritten compactly when loaded and
// when deletions make up most of it. A torn last line (a crash mid-write)
// is ignored.
//
// HNS gives a load balancer its ID only when it creates it, so the record
// of a create is written after it: a crash in between would leave a load
// balancer nobody owns, whose frontend HNS then refuses to anyone (upstream
// winkernel's ErrFrontendInUse), and the Service would keep what that one
// holds. So before each create the driver appends an intent
// ({"intent":K,"echo":E}: the key and a digest of what HNS echoes of the
// load balancer, frontend and endpoints), written before the create is
// asked for (it survives the process; the round's flush makes it survive a
// power cut). A restarted driver adopts a load balancer no record owns
// whose echo matches an intent exactly, and then forgets the intents.
type ownedState struct {
	LoadBalancers map[string]string // HNS ID -> key
	// Asked is, per HNS ID, the digest of what the driver set beyond what
	// HNS is known to echo (identity.go); absent in records written before
	// it was kept.
	Asked map[string]string
	// Intents are the creates not known to have been recorded, by key.
	Intents map[string]intent

	pending []ownedLine // appended by the next save
	lines   int         // lines in the file after the header
	rewrite bool        // the next save rewrites the file (intents dropped)
}

// intent is a load balancer about to be created.
type intent struct{ echo, asked string }

type ownedLine struct {
	Add    string `json:"add,omitempty"`
	Key    string `json:"key,omitempty"`
	Asked  string `json:"asked,omitempty"`
	Del    string `json:"del,omitempty"`
	Intent string `json:"intent,omitempty"`
	Echo   string `json:"echo,omitempty"`
}

type ownedHeader struct {
	Switchyard string `json:"switchyard"` // "hns-owned"
	Version    int    `json:"version"`
}

const ownedFormat = 2

func (s *ownedState) add(id, key, asked string) {
	s.LoadBalancers[id] = key
	s.Asked[id] = asked
	delete(s.Intents, key)
	s.pending = append(s.pending, ownedLine{Add: id, Key: key, Asked: asked})
}

// intend writes, before a create is asked for, that key's load balancer is
// being created with this echo (see ownedState). One write, not flushed:
// it must survive the process, and the round's save flushes it.
func (s *ownedState) intend(path, key, echo, asked string) error {
	if in, ok := s.Intents[key]; ok && in == (intent{echo: echo, asked: asked}) {
		return nil // already written (a retry of a create HNS refused)
	}
	b, _ := json.Marshal(ownedLine{Intent: key, Echo: echo, Asked: asked})
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		s.Intents[key] = intent{echo: echo, asked: asked}
		return s.compact(path)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	s.Intents[key] = intent{echo: echo, asked: asked}
	s.lines++
	return nil
}

// forgetIntents drops every intent (a restarted driver resolved them):
// the next save rewrites the file without them.
func (s *ownedState) forgetIntents() {
	if len(s.Intents) > 0 {
		s.Intents, s.rewrite = map[string]intent{}, true
	}
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
	s := ownedState{LoadBalancers: map[string]string{}, Asked: map[string]string{}, Intents: map[string]intent{}}
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
		case l.Intent != "":
			s.Intents[l.Intent] = intent{echo: l.Echo, asked: l.Asked}
		case l.Add != "":
			s.LoadBalancers[l.Add] = l.Key
			if l.Asked != "" {
				s.Asked[l.Add] = l.Asked
			}
			delete(s.Intents, l.Key)
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
	if s.rewrite {
		return s.compact(path)
	}
	if len(s.pending) == 0 {
		return nil
	}
	if s.lines+len(s.pending) > 2*len(s.LoadBalancers)+2*len(s.Intents)+64 {
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
	if err := f.Sync(); err != nil { // this round's intents and records, on disk
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

// compact rewrites the file atomically (flushed to disk) with one line per
// load balancer and per intent.
func (s *ownedState) compact(path string) error {
	var buf bytes.Buffer
	h, _ := json.Marshal(ownedHeader{Switchyard: "hns-owned", Version: ownedFormat})
	buf.Write(h)
	buf.WriteByte('\n')
	for id, key := range s.LoadBalancers {
		b, _ := json.Marshal(ownedLine{Add: id, Key: key, Asked: s.Asked[id]})
		buf.Write(b)
		buf.WriteByte('\n')
	}
	for key, in := range s.Intents {
		b, _ := json.Marshal(ownedLine{Intent: key, Echo: in.echo, Asked: in.asked})
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := atomicfile.Write(path, &buf, 0o644); err != nil {
		return err
	}
	s.lines = len(s.LoadBalancers) + len(s.Intents)
	s.pending, s.rewrite = nil, false
	return nil
}
