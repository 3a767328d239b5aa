package object

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Meta is the identity of a copy: its namespace, name and resource
// version, what client-go's caches read of an object. Its methods make
// *Service and *EndpointSlice metav1.Objects (meta.Accessor), so a cache
// reads them in place: a GetObjectMeta making a metav1.ObjectMeta on each
// call (~256 bytes, a few calls per object and event) was ~6% of all
// switchyard allocated over a 100k-Service benchmark run (docs/scale.md).
// What the copy does not keep reads as unset, and setting it does nothing.
type Meta struct {
	Namespace, Name string
	// ResourceVersion is kept for the informer's bookkeeping.
	ResourceVersion string
}

var (
	_ metav1.Object = (*Service)(nil)
	_ metav1.Object = (*EndpointSlice)(nil)
)

// The metav1.Object methods: the identity's own, then those of what a
// copy does not keep.

func (m *Meta) GetNamespace() string                  { return m.Namespace }
func (m *Meta) SetNamespace(namespace string)         { m.Namespace = namespace }
func (m *Meta) GetName() string                       { return m.Name }
func (m *Meta) SetName(name string)                   { m.Name = name }
func (m *Meta) GetResourceVersion() string            { return m.ResourceVersion }
func (m *Meta) SetResourceVersion(version string)     { m.ResourceVersion = version }
func (m *Meta) GetGenerateName() string               { return "" }
func (m *Meta) SetGenerateName(string)                {}
func (m *Meta) GetUID() types.UID                     { return "" }
func (m *Meta) SetUID(types.UID)                      {}
func (m *Meta) GetGeneration() int64                  { return 0 }
func (m *Meta) SetGeneration(int64)                   {}
func (m *Meta) GetSelfLink() string                   { return "" }
func (m *Meta) SetSelfLink(string)                    {}
func (m *Meta) GetCreationTimestamp() metav1.Time     { return metav1.Time{} }
func (m *Meta) SetCreationTimestamp(metav1.Time)      {}
func (m *Meta) GetDeletionTimestamp() *metav1.Time    { return nil }
func (m *Meta) SetDeletionTimestamp(*metav1.Time)     {}
func (m *Meta) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (m *Meta) SetDeletionGracePeriodSeconds(*int64)  {}
func (m *Meta) GetLabels() map[string]string          { return nil }
func (m *Meta) SetLabels(map[string]string)           {}
func (m *Meta) GetAnnotations() map[string]string     { return nil }
func (m *Meta) SetAnnotations(map[string]string)      {}
func (m *Meta) GetFinalizers() []string               { return nil }
func (m *Meta) SetFinalizers([]string)                {}

func (m *Meta) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (m *Meta) SetOwnerReferences([]metav1.OwnerReference)    {}
func (m *Meta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (m *Meta) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

// GetAnnotations is the annotations the copy keeps (Service.Annotations).
func (s *Service) GetAnnotations() map[string]string { return s.Annotations }
