// Package kube is the live source: client-go shared informers on Services,
// EndpointSlices and this Node (every Node for drivers that read peers),
// with the label selectors kube-proxy uses.
package kube

import (
	"context"
	"fmt"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/source"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Source watches the API server.
type Source struct {
	Client   kubernetes.Interface
	NodeName string
	// AllNodes watches every Node instead of only NodeName's.
	AllNodes bool
	// ProxyName: see build.Options.ProxyName. With it empty, labelled
	// Services are filtered out server-side as kube-proxy does.
	ProxyName string
	// SyncTimeout bounds the wait for the first complete view (0: until ctx
	// ends).
	SyncTimeout time.Duration
	// Config, when set, is Client's: Services and EndpointSlices are then
	// watched through clients that decode them straight into the core's
	// copies (slimCodec). Without it (a fake Client) they decode as API
	// objects, which the informers' transform converts.
	Config *rest.Config
}

var _ source.Source = (*Source)(nil)

// Selector is the label selector for Services and EndpointSlices: no
// service.kubernetes.io/headless label, and no service-proxy-name label
// unless a proxy name is set (the builder then picks ours).
func Selector(proxyName string) (labels.Selector, error) {
	sel := labels.NewSelector()
	headless, err := labels.NewRequirement(object.LabelHeadless, selection.DoesNotExist, nil)
	if err != nil {
		return nil, err
	}
	sel = sel.Add(*headless)
	if proxyName == "" {
		noProxy, err := labels.NewRequirement(object.LabelServiceProxyName, selection.DoesNotExist, nil)
		if err != nil {
			return nil, err
		}
		sel = sel.Add(*noProxy)
	}
	return sel, nil
}

// Start registers the informers, starts them, and returns once their caches
// have synced. Watch errors after that are retried by client-go.
func (s *Source) Start(ctx context.Context, sink source.Sink) error {
	sel, err := Selector(s.ProxyName)
	if err != nil {
		return err
	}
	// Objects are converted to the core's copies before they enter the
	// caches: the caches and the core share them, and the API types are
	// never kept (package object).
	var conv object.Converter
	trim := conv.Convert
	selected := func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }
	objects := informers.NewSharedInformerFactoryWithOptions(s.Client, 0,
		informers.WithTweakListOptions(selected), informers.WithTransform(trim))
	nodes := informers.NewSharedInformerFactoryWithOptions(s.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			if !s.AllNodes {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.NodeName).String()
			}
		}),
		informers.WithTransform(trim))

	// Without the by-namespace index the factory's informers carry:
	// nothing here looks objects up by namespace, and it costs memory.
	noIndex := cache.Indexers{}
	svcInf, sliceInf, err := s.informers(objects, &conv, selected, noIndex)
	if err != nil {
		return err
	}
	nodeInf := nodes.Core().V1().Nodes().Informer()
	// The first complete view is when every handler has seen the initial
	// list, not when the informers' stores hold it: a handler still
	// working through a 10k-object list would otherwise make the first
	// full sync partial, and that sync would remove the rest from the
	// dataplane until they arrive (client-go: the registration's
	// HasSynced, not the informer's).
	var synced []cache.InformerSynced
	for _, reg := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{svcInf, handler(sink.UpsertService, func(o *object.Service) { sink.DeleteService(o.Namespace, o.Name) })},
		{sliceInf, handler(sink.UpsertEndpointSlice, func(o *object.EndpointSlice) { sink.DeleteEndpointSlice(o.Namespace, o.Name) })},
		{nodeInf, handler(sink.UpsertNode, func(o *v1.Node) { sink.DeleteNode(o.Name) })},
	} {
		r, err := reg.inf.AddEventHandler(reg.h)
		if err != nil {
			return err
		}
		synced = append(synced, r.HasSynced)
	}
	objects.Start(ctx.Done())
	nodes.Start(ctx.Done())

	syncCtx := ctx
	if s.SyncTimeout > 0 {
		var cancel context.CancelFunc
		syncCtx, cancel = context.WithTimeout(ctx, s.SyncTimeout)
		defer cancel()
	}
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		return fmt.Errorf("kube source: informers did not sync (the initial lists did not all reach the handlers): %w", context.Cause(syncCtx))
	}
	return nil
}

// informers registers the Service and EndpointSlice informers with the
// factory: over the slim clients with Config, client-go's own without.
func (s *Source) informers(f informers.SharedInformerFactory, conv *object.Converter, selected func(*metav1.ListOptions), indexers cache.Indexers) (services, slices cache.SharedIndexInformer, err error) {
	if s.Config != nil {
		return copyInformers(f, s.Config, conv, selected, indexers)
	}
	services = f.InformerFor(&v1.Service{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredServiceInformer(c, metav1.NamespaceAll, resync, indexers, selected)
	})
	slices = f.InformerFor(&discovery.EndpointSlice{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return discoveryinformers.NewFilteredEndpointSliceInformer(c, metav1.NamespaceAll, resync, indexers, selected)
	})
	return services, slices, nil
}

// handler adapts typed upsert/delete functions to an informer handler,
// unwrapping the tombstones a missed delete leaves.
func handler[T any](upsert func(*T), remove func(*T)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(*T); ok {
				upsert(o)
			}
		},
		UpdateFunc: func(_, obj any) {
			if o, ok := obj.(*T); ok {
				upsert(o)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(*T); ok {
				remove(o)
			}
		},
	}
}
