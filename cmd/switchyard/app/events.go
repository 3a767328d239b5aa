package app

import (
	"github.com/switchyard-proxy/switchyard/core/build"
	coremetrics "github.com/switchyard-proxy/switchyard/core/metrics"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// events records Warning Events on the objects the core refuses and the
// Services a driver has problems with, when switchyard reads an API
// server (the chart's ClusterRole allows creating Events); with a file
// source they go to the log and metrics only. The recorder aggregates
// repeats, as kubelet's does.
type events struct {
	driver   string
	recorder record.EventRecorder // nil: no API server
	stop     func()
}

func newEvents(client kubernetes.Interface, driver, node string) *events {
	e := &events{driver: driver, stop: func() {}}
	if client == nil {
		return e
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	e.recorder = b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "switchyard", Host: node})
	e.stop = b.Shutdown
	return e
}

// Problem implements dataplanes.ProblemSink.
func (e *events) Problem(p dataplanes.Problem) {
	problemsTotal.WithLabelValues(e.driver, p.Reason).Inc()
	if e.recorder == nil || p.ServicePort.Name == "" {
		return // no Service to attach it to: counted (the driver logs it)
	}
	ref := &v1.ObjectReference{APIVersion: "v1", Kind: "Service", Namespace: p.ServicePort.Namespace, Name: p.ServicePort.Name}
	e.recorder.Eventf(ref, v1.EventTypeWarning, p.Reason, "%s (dataplane %s, port %s/%s)",
		dataplanes.Bounded(p.Message, dataplanes.MaxMessage), e.driver, p.ServicePort.Port, p.ServicePort.Protocol)
}

// rejected records an Event on the object the core refused.
func (e *events) rejected(r build.Rejection) {
	if e.recorder == nil {
		return
	}
	ref := &v1.ObjectReference{Kind: r.Object.Kind, Namespace: r.Object.Namespace, Name: r.Object.Name}
	switch r.Object.Kind {
	case "Service", "Node":
		ref.APIVersion = "v1"
	case "EndpointSlice":
		ref.APIVersion = "discovery.k8s.io/v1"
	default:
		return // a file's document: no object to attach it to
	}
	msg := r.Message
	if r.Field != "" {
		msg = r.Field + ": " + msg
	}
	e.recorder.Event(ref, v1.EventTypeWarning, string(r.Reason), "switchyard ignores this: "+msg)
}

// observer is the core's observer plus Events for rejections.
type observer struct {
	*coremetrics.Observer
	events *events
}

// Rejected logs, counts and records an Event.
func (o *observer) Rejected(r build.Rejection) {
	o.Observer.Rejected(r)
	o.events.rejected(r)
}
