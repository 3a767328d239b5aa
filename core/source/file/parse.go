// Package file is the offline source: a YAML file of Services,
// EndpointSlices and Nodes exactly as `kubectl get -o yaml` prints them
// (several documents, or a `kind: List`), re-read when it changes.
package file

import (
	"bytes"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"
)

// Objects are the proxied kinds found in a file.
type Objects struct {
	Services []*v1.Service
	Slices   []*discovery.EndpointSlice
	Nodes    []*v1.Node
}

// DocError is one document (or List item) that could not be used.
type DocError struct {
	File  string
	Index int // 1-based document number
	Line  int // line the document starts on
	Item  int // 0-based item within a List document, or -1
	// Key identifies the object when the broken document still names one
	// ("Service ns/name"); "" when it cannot be told.
	Key string
	Err error
}

func (e DocError) Error() string {
	where := fmt.Sprintf("%s: document %d (line %d)", e.File, e.Index, e.Line)
	if e.Item >= 0 {
		where += fmt.Sprintf(" item %d", e.Item)
	}
	if e.Key != "" {
		where += " " + e.Key
	}
	return where + ": " + e.Err.Error()
}

// Load is the result of parsing one file.
type Load struct {
	Objects
	Errors  []DocError
	Ignored map[string]int // other kinds found (Pods, ConfigMaps...), by kind

	seen map[string]int // objectKey -> 1-based document that defined it
}

var decoder runtime.Decoder

func init() {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := discovery.AddToScheme(scheme); err != nil {
		panic(err)
	}
	decoder = serializer.NewCodecFactory(scheme).UniversalDeserializer()
}

// Parse reads every document of a file's contents. It never fails as a
// whole: each unusable document is listed in Errors and the rest load.
// Documents (and a List's items) are decoded in parallel, then taken in
// order: decoding YAML is nearly all of the time (docs/scale.md,
// "Process start to first sync").
func Parse(name string, data []byte) Load {
	l := Load{Ignored: map[string]int{}, seen: map[string]int{}}
	var docs []document
	var bodies [][]byte
	for i, d := range splitDocuments(data) {
		if isBlank(d.body) {
			continue
		}
		d.index = i + 1
		docs = append(docs, d)
		bodies = append(bodies, d.body)
	}
	for i, dec := range decodeAll(bodies) {
		l.addDocument(name, docs[i].index, docs[i].line, -1, docs[i].body, dec)
	}
	return l
}

// decoded is one document or List item, decoded.
type decoded struct {
	obj runtime.Object
	gvk *schema.GroupVersionKind
	err error
}

// decodeAll decodes bodies on every core.
func decodeAll(bodies [][]byte) []decoded {
	out := make([]decoded, len(bodies))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(goruntime.GOMAXPROCS(0), len(bodies)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(bodies); i = int(next.Add(1) - 1) {
				obj, gvk, err := decoder.Decode(bodies[i], nil, nil)
				out[i] = decoded{obj, gvk, err}
			}
		})
	}
	wg.Wait()
	return out
}

func (l *Load) addDocument(file string, index, line, item int, body []byte, dec decoded) {
	fail := func(err error) {
		l.Errors = append(l.Errors, DocError{File: file, Index: index, Line: line, Item: item, Key: identify(body), Err: err})
	}
	obj, gvk, err := dec.obj, dec.gvk, dec.err
	if err != nil {
		if runtime.IsNotRegisteredError(err) {
			switch h := headerOf(body); h.Kind {
			case "":
			case "Service", "Node", "EndpointSlice", "List":
				fail(fmt.Errorf("apiVersion %q of kind %s is not supported (use v1, or discovery.k8s.io/v1 for EndpointSlice)", h.APIVersion, h.Kind))
				return
			default:
				l.Ignored[h.Kind]++
				return
			}
		}
		fail(cleanDecodeError(err))
		return
	}
	switch o := obj.(type) {
	case *v1.List:
		if item >= 0 {
			fail(fmt.Errorf("a List inside a List is not supported"))
			return
		}
		items := make([][]byte, len(o.Items))
		for j, raw := range o.Items {
			items[j] = raw.Raw
		}
		for j, dec := range decodeAll(items) {
			l.addDocument(file, index, line, j, items[j], dec)
		}
	case *v1.Service:
		l.Services = add(l, l.Services, o, "Service", index, fail)
	case *discovery.EndpointSlice:
		l.Slices = add(l, l.Slices, o, "EndpointSlice", index, fail)
	case *v1.Node:
		l.Nodes = add(l, l.Nodes, o, "Node", index, fail)
	default:
		l.Ignored[gvk.Kind]++
	}
}

// named is what the parser needs of Services, EndpointSlices and Nodes.
type named interface {
	GetName() string
	GetNamespace() string
	SetNamespace(string)
}

// add appends o to list, or replaces the earlier object of the same name
// (reporting the repeat: the later document wins). It requires a name; a
// namespaced object without a namespace goes to "default", as kubectl apply
// would put it.
func add[T named](l *Load, list []T, o T, kind string, index int, fail func(error)) []T {
	if o.GetName() == "" {
		fail(fmt.Errorf("metadata.name is missing"))
		return list
	}
	ns := o.GetNamespace()
	switch {
	case kind == "Node":
		ns = "" // cluster-scoped
	case ns == "":
		ns = "default"
		o.SetNamespace(ns)
	}
	key := objectKey(kind, ns, o.GetName())
	first, seen := l.seen[key]
	if !seen {
		l.seen[key] = index
		return append(list, o)
	}
	fail(fmt.Errorf("%s was already defined by document %d; this later one wins", key, first))
	for i, x := range list {
		if x.GetName() == o.GetName() && x.GetNamespace() == o.GetNamespace() {
			list[i] = o
		}
	}
	return list
}

// header is the little of a document needed to name it even when it does
// not decode.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

func headerOf(body []byte) header {
	var h header
	if yaml.Unmarshal(body, &h) != nil {
		return header{}
	}
	return h
}

// identify names the object a document describes ("Service ns/name"), or
// returns "" when the document is too broken to tell.
func identify(body []byte) string {
	var h header
	if yaml.Unmarshal(body, &h) != nil || h.Kind == "" || h.Metadata.Name == "" {
		return ""
	}
	switch h.Kind {
	case "Service", "EndpointSlice":
		ns := h.Metadata.Namespace
		if ns == "" {
			ns = "default"
		}
		return objectKey(h.Kind, ns, h.Metadata.Name)
	case "Node":
		return objectKey("Node", "", h.Metadata.Name)
	}
	return ""
}

func objectKey(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// cleanDecodeError trims the decoder's long prefix off an error.
func cleanDecodeError(err error) error {
	msg := err.Error()
	if i := strings.LastIndex(msg, "json: "); i >= 0 {
		msg = msg[i+len("json: "):]
	}
	return fmt.Errorf("%s", msg)
}

type document struct {
	index, line int // 1-based
	body        []byte
}

// splitDocuments splits YAML at "---" lines, remembering where each
// document starts. The documents share data's memory.
func splitDocuments(data []byte) []document {
	var docs []document
	cur := document{line: 1}
	start, pos, lineNo := 0, 0, 0
	for pos < len(data) {
		lineNo++
		end := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end = pos + i + 1
		}
		if isSeparator(data[pos:end]) {
			cur.body = data[start:pos:pos]
			docs = append(docs, cur)
			cur = document{line: lineNo + 1}
			start = end
		}
		pos = end
	}
	cur.body = data[start:len(data):len(data)]
	return append(docs, cur)
}

func isSeparator(line []byte) bool {
	t := bytes.TrimRight(line, " \t\r\n")
	if !bytes.HasPrefix(t, []byte("---")) {
		return false
	}
	rest := bytes.TrimSpace(t[3:])
	return len(rest) == 0 || rest[0] == '#'
}

func isBlank(body []byte) bool {
	for _, l := range bytes.Split(body, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}
