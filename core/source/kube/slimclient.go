package kube

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// slimClients are core/v1 and discovery/v1 clients for cfg whose Services
// and EndpointSlices arrive as the core's copies (*object.Service,
// *object.EndpointSlice) when the API server answers in protobuf.
func slimClients(cfg *rest.Config, conv *object.Converter) (*corev1client.CoreV1Client, *discoveryclient.DiscoveryV1Client, error) {
	core, err := slimREST(cfg, schema.GroupVersion{Version: "v1"}, "/api", conv)
	if err != nil {
		return nil, nil, err
	}
	discovery, err := slimREST(cfg, sliceGV, "/apis", conv)
	if err != nil {
		return nil, nil, err
	}
	return corev1client.New(core), discoveryclient.New(discovery), nil
}

func slimREST(cfg *rest.Config, gv schema.GroupVersion, apiPath string, conv *object.Converter) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion, c.APIPath = &gv, apiPath
	c.NegotiatedSerializer = slimCodec{NegotiatedSerializer: scheme.Codecs.WithoutConversion(), conv: conv}
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("%s client: %w", gv, err)
	}
	return rc, nil
}

// copyInformer is client-go's informer over list and watch (with the
// options tweak makes), with example, a copy, as its example object: the
// reflector drops watch events of another type. client is the one list
// and watch use (client-go asks it whether it can stream the initial
// state).
func copyInformer(example runtime.Object, client any, tweak func(*metav1.ListOptions), indexers cache.Indexers,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return watchFn(ctx, o)
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client),
		example, cache.SharedIndexInformerOptions{Indexers: indexers})
}

// copyInformers registers the Service and EndpointSlice informers over
// the slim clients for cfg with f.
func copyInformers(f informers.SharedInformerFactory, cfg *rest.Config, conv *object.Converter,
	tweak func(*metav1.ListOptions), indexers cache.Indexers) (services, slices cache.SharedIndexInformer, err error) {
	core, disc, err := slimClients(cfg, conv)
	if err != nil {
		return nil, nil, err
	}
	svcs, eps := core.Services(metav1.NamespaceAll), disc.EndpointSlices(metav1.NamespaceAll)
	services = f.InformerFor(&object.Service{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
		return copyInformer(&object.Service{}, core, tweak, indexers, listCopies(core.RESTClient(), conv, "services"), svcs.Watch)
	})
	slices = f.InformerFor(&object.EndpointSlice{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
		return copyInformer(&object.EndpointSlice{}, disc, tweak, indexers, listCopies(disc.RESTClient(), conv, "endpointslices"), eps.Watch)
	})
	return services, slices, nil
}

// listCopies lists resource across namespaces as the typed clients' List
// does, but reads a protobuf answer as it arrives into an object.List of
// copies (object.Converter.ReadList) instead of reading it whole and
// decoding it into the API's list type; a JSON answer decodes into the
// API's list, which the informers' transform converts.
func listCopies(c rest.Interface, conv *object.Converter, resource string) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		req := c.Get().Resource(resource).VersionedParams(&o, scheme.ParameterCodec)
		if o.TimeoutSeconds != nil {
			req = req.Timeout(time.Duration(*o.TimeoutSeconds) * time.Second)
		}
		body, err := req.Stream(ctx)
		if err != nil {
			return nil, err
		}
		defer body.Close()
		in := bufio.NewReaderSize(body, 64<<10)
		if magic, _ := in.Peek(len(object.ProtobufMagic)); bytes.Equal(magic, object.ProtobufMagic) {
			return conv.ReadList(in)
		}
		data, err := io.ReadAll(in)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", resource, err)
		}
		list, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
		return list, err
	}
}
