package build

import "fmt"

// Reason is a machine-readable cause of a rejection; it is a metric label,
// so the set is closed.
type Reason string

// Every reason the builder can give.
const (
	ReasonInvalidIP          Reason = "InvalidIP"
	ReasonForbiddenIP        Reason = "ForbiddenIP" // loopback, link-local, unspecified...
	ReasonIPFamilyMismatch   Reason = "IPFamilyMismatch"
	ReasonInvalidCIDR        Reason = "InvalidCIDR"
	ReasonInvalidPort        Reason = "InvalidPort"
	ReasonUnknownProtocol    Reason = "UnknownProtocol"
	ReasonDuplicatePort      Reason = "DuplicatePort"
	ReasonNodePortOutOfRange Reason = "NodePortOutOfRange"
	ReasonNoClusterIP        Reason = "NoValidClusterIP"
	ReasonDuplicateFamily    Reason = "DuplicateIPFamily"
	ReasonInvalidAffinity    Reason = "InvalidSessionAffinity"
	ReasonMissingPortName    Reason = "MissingPortName"
	ReasonMissingAddress     Reason = "MissingAddress"
	ReasonUnsupportedAddress Reason = "UnsupportedAddressType"
	ReasonMissingServiceName Reason = "MissingServiceNameLabel"
	ReasonMissingName        Reason = "MissingName"
	ReasonMalformedDocument  Reason = "MalformedDocument"
	ReasonProtectedIP        Reason = "ProtectedIP" // an external or LB IP that is the API server's address
)

// Reasons lists every reason, for metric pre-registration and docs.
var Reasons = []Reason{
	ReasonInvalidIP, ReasonForbiddenIP, ReasonIPFamilyMismatch, ReasonInvalidCIDR,
	ReasonInvalidPort, ReasonUnknownProtocol, ReasonDuplicatePort, ReasonNodePortOutOfRange,
	ReasonNoClusterIP, ReasonDuplicateFamily, ReasonInvalidAffinity, ReasonMissingPortName,
	ReasonMissingAddress, ReasonUnsupportedAddress, ReasonMissingServiceName, ReasonMissingName,
	ReasonMalformedDocument, ReasonProtectedIP,
}

// ObjectRef names the object a rejection is about.
type ObjectRef struct {
	Kind      string // "Service", "EndpointSlice", "Node" or "Document"
	Namespace string
	Name      string
}

func (o ObjectRef) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Rejection is one part of one object the builder refused, and why. The rest
// of the object, and every other object, is still used.
type Rejection struct {
	Object  ObjectRef
	Field   string // path inside the object, e.g. "endpoints[2].addresses[0]"
	Reason  Reason
	Message string
}

func (r Rejection) String() string {
	if r.Field == "" {
		return fmt.Sprintf("%s: %s: %s", r.Object, r.Reason, r.Message)
	}
	return fmt.Sprintf("%s %s: %s: %s", r.Object, r.Field, r.Reason, r.Message)
}

// rejections collects rejections for one object.
type rejections struct {
	obj  ObjectRef
	list []Rejection
}

func (r *rejections) add(field string, reason Reason, format string, args ...any) {
	r.list = append(r.list, Rejection{Object: r.obj, Field: field, Reason: reason, Message: fmt.Sprintf(format, args...)})
}
