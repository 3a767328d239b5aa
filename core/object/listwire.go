package object

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"google.golang.org/protobuf/encoding/protowire"
)

// List is one answer to a list request for Services or EndpointSlices
// (a page of it, when the client asked for pages) whose items are the
// core's copies, decoded straight from the wire (ReadList): a list
// decoded into the API types first held every API object of the page at
// once beside its copies (docs/scale.md, "Lists decoded straight into
// the copies"). Its methods make it what client-go's reflector and pager
// read of a list: a runtime.Object whose Items meta.ExtractList reads,
// with a metav1.ListInterface.
type List struct {
	ResourceVersion    string
	Continue           string
	RemainingItemCount *int64
	// Items are *Service or *EndpointSlice, in the order sent.
	Items []runtime.Object
}

var (
	_ runtime.Object       = (*List)(nil)
	_ metav1.ListInterface = (*List)(nil)
)

// What ReadList reads of a list: its metadata (1) and items (2), and of
// the metadata its resource version (2), continue token (3) and remaining
// item count (4, a varint); selfLink (1) is not kept, as the copies keep
// none.
var (
	listMessage     = reads(nums(1, 2), nil)
	listMetaMessage = reads(nums(2, 3), nums(4))
)

func (l *List) meta(num protowire.Number, x uint64, v []byte) error {
	switch num {
	case 2:
		l.ResourceVersion = string(v)
	case 3:
		l.Continue = string(v)
	case 4:
		n := int64(x)
		l.RemainingItemCount = &n
	}
	return nil
}

// GetObjectKind is empty: a List does not keep its kind.
func (l *List) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies l and each of its items.
func (l *List) DeepCopyObject() runtime.Object {
	out := *l
	out.RemainingItemCount = clonePtr(l.RemainingItemCount)
	out.Items = slices.Clone(l.Items)
	for i, o := range out.Items {
		out.Items[i] = o.DeepCopyObject()
	}
	return &out
}

// The metav1.ListInterface methods. A List keeps no selfLink.
func (l *List) GetResourceVersion() string         { return l.ResourceVersion }
func (l *List) SetResourceVersion(version string)  { l.ResourceVersion = version }
func (l *List) GetSelfLink() string                { return "" }
func (l *List) SetSelfLink(string)                 {}
func (l *List) GetContinue() string                { return l.Continue }
func (l *List) SetContinue(c string)               { l.Continue = c }
func (l *List) GetRemainingItemCount() *int64      { return l.RemainingItemCount }
func (l *List) SetRemainingItemCount(count *int64) { l.RemainingItemCount = count }
