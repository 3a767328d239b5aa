package file

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/source"
	v1 "k8s.io/api/core/v1"
)

// Source watches one file by polling its size, modification time and
// content (polling also follows ConfigMap-style symlink swaps, which
// inotify watches miss).
type Source struct {
	Path     string
	Interval time.Duration   // default 1s
	Observer source.Observer // nil: ignore
	// OnLoad, if set, is told about every load that reached the sink.
	OnLoad func(Load)

	last     *[sha256.Size]byte // digest of the contents last loaded (not the contents: a large file)
	lastStat stamp
	current  map[string]any  // by objectKey, as handed to the sink
	reported map[string]bool // errors already reported, by text
	conv     object.Converter
}

var _ source.Source = (*Source)(nil)

type stamp struct {
	size    int64
	modTime time.Time
}

// Start reads the file once (an unreadable file is an error) and then
// watches it until ctx ends.
func (s *Source) Start(ctx context.Context, sink source.Sink) error {
	if s.Interval <= 0 {
		s.Interval = time.Second
	}
	if s.Observer == nil {
		s.Observer = source.NopObserver{}
	}
	s.current = map[string]any{}
	s.reported = map[string]bool{}
	data, st, err := read(s.Path)
	if err != nil {
		return err
	}
	s.load(data, st, sink)
	go s.watch(ctx, sink)
	return nil
}

func read(path string) ([]byte, stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, stamp{}, fmt.Errorf("cluster file: %w", err)
	}
	if fi.IsDir() {
		return nil, stamp{}, fmt.Errorf("cluster file %s is a directory", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, stamp{}, fmt.Errorf("cluster file: %w", err)
	}
	return data, stamp{fi.Size(), fi.ModTime()}, nil
}

func (s *Source) watch(ctx context.Context, sink source.Sink) {
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fi, err := os.Stat(s.Path)
		if err == nil && (stamp{fi.Size(), fi.ModTime()}) == s.lastStat {
			continue
		}
		data, st, err := read(s.Path)
		if err != nil {
			// A file being replaced may vanish for a moment: keep what is
			// programmed and say so once.
			s.report(build.Rejection{
				Object: build.ObjectRef{Kind: "Document", Name: s.Path}, Reason: build.ReasonMalformedDocument,
				Message: err.Error() + "; keeping the last good state",
			})
			continue
		}
		s.load(data, st, sink)
	}
}

// load parses new contents and hands the sink only what changed.
func (s *Source) load(data []byte, st stamp, sink source.Sink) {
	s.lastStat = st
	sum := sha256.Sum256(data)
	if s.last != nil && *s.last == sum {
		return
	}
	s.last = &sum
	l := Parse(s.Path, data)
	next := make(map[string]any, len(s.current))
	// Kept as the core's copies, as the kube source keeps them.
	for _, o := range l.Services {
		next[objectKey("Service", o.Namespace, o.Name)] = s.conv.Service(o)
	}
	for _, o := range l.Slices {
		next[objectKey("EndpointSlice", o.Namespace, o.Name)] = s.conv.EndpointSlice(o)
	}
	for _, o := range l.Nodes {
		next[objectKey("Node", "", o.Name)] = object.Node(o)
	}

	// A broken document must not delete what it used to describe: keep its
	// object if the document still names it, and hold every deletion if
	// some broken document names nothing.
	holdAll := false
	held := map[string]bool{}
	for _, e := range l.Errors {
		if e.Key == "" {
			holdAll = true
		}
		held[e.Key] = true
	}
	for key, old := range s.current {
		if _, ok := next[key]; ok {
			continue
		}
		if holdAll || held[key] {
			next[key] = old
			continue
		}
		deleteObject(sink, old)
	}
	for key, o := range next {
		if old, ok := s.current[key]; !ok || !reflect.DeepEqual(old, o) {
			upsertObject(sink, o)
		}
	}
	s.current = next

	seen := map[string]bool{}
	for _, e := range l.Errors {
		msg := e.Error()
		seen[msg] = true
		s.report(build.Rejection{
			Object:  build.ObjectRef{Kind: "Document", Name: fmt.Sprintf("%s#%d", e.File, e.Index)},
			Reason:  build.ReasonMalformedDocument,
			Message: msg,
		})
	}
	for msg := range s.reported {
		if !seen[msg] {
			delete(s.reported, msg) // fixed: report again if it comes back
		}
	}
	if s.OnLoad != nil {
		s.OnLoad(l)
	}
}

func (s *Source) report(r build.Rejection) {
	if s.reported[r.Message] {
		return
	}
	s.reported[r.Message] = true
	s.Observer.Rejected(r)
}

func upsertObject(sink source.Sink, o any) {
	switch x := o.(type) {
	case *object.Service:
		sink.UpsertService(x)
	case *object.EndpointSlice:
		sink.UpsertEndpointSlice(x)
	case *v1.Node:
		sink.UpsertNode(x)
	}
}

func deleteObject(sink source.Sink, o any) {
	switch x := o.(type) {
	case *object.Service:
		sink.DeleteService(x.Namespace, x.Name)
	case *object.EndpointSlice:
		sink.DeleteEndpointSlice(x.Namespace, x.Name)
	case *v1.Node:
		sink.DeleteNode(x.Name)
	}
}
