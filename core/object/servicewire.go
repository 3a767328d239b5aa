package object

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"google.golang.org/protobuf/encoding/protowire"
)

// DecodeService makes the core's copy of a v1 Service straight from its
// protobuf encoding (the message inside the API server's runtime.Unknown
// envelope), as DecodeEndpointSlice does for slices: the copy is exactly
// what Service makes of the decoded object
// (TestDecodeServiceMatchesConvert). Unknown fields are skipped; a field
// of the wrong wire type or a truncated message is an error.
func (c *Converter) DecodeService(b []byte) (*Service, error) {
	d := serviceDecoder{out: &Service{}}
	if err := fields(b, serviceMessage, d.service); err != nil {
		return nil, fmt.Errorf("Service: %w", err)
	}
	if d.hasTimeout {
		d.out.AffinityTimeout = &d.timeout
	}
	return d.out, nil
}

// serviceDecoder fills out as the wire says. The affinity timeout is
// kept aside: the copy points to it only when it was sent (inside
// sessionAffinityConfig's clientIP), as Service copies the API type's
// pointer.
type serviceDecoder struct {
	out        *Service
	timeout    int32
	hasTimeout bool
}

func (d *serviceDecoder) service(num protowire.Number, _ uint64, v []byte) error {
	switch num {
	case 1:
		return objectMeta(v, &d.out.Meta, d.label, d.annotation)
	case 2:
		return fields(v, specMessage, d.spec)
	default:
		return fields(v, statusMessage, d.status)
	}
}

func (d *serviceDecoder) label(k, v []byte) {
	switch string(k) {
	case LabelServiceProxyName:
		d.out.ProxyName, d.out.HasProxyName = string(v), true
	case LabelHeadless:
		d.out.Headless = true
	}
}

// annotation keeps all but kubectl's last-applied configuration, as
// Service does; later entries win, as in a map.
func (d *serviceDecoder) annotation(k, v []byte) {
	if string(k) == v1.LastAppliedConfigAnnotation {
		return
	}
	if d.out.Annotations == nil {
		d.out.Annotations = map[string]string{}
	}
	d.out.Annotations[string(k)] = string(v)
}

// What the decoder reads of a Service (metadata 1, spec 2, status 3) and
// of the messages inside it, by field number (k8s.io/api's generated.proto).
var (
	serviceMessage = reads(nums(1, 2, 3), nil)
	specMessage    = reads(nums(1, 3, 4, 5, 7, 9, 11, 14, 18, 22), nums(12))
	portMessage    = reads(nums(1, 2), nums(3, 5))
	// sessionAffinityConfig's clientIP, and its timeoutSeconds.
	affinityMessage = reads(nums(1), nil)
	clientIPMessage = reads(nil, nums(1))
	// status's loadBalancer, its ingress points, and each one's ip and ipMode.
	statusMessage       = reads(nums(1), nil)
	loadBalancerMessage = reads(nums(1), nil)
	ingressMessage      = reads(nums(1, 3), nil)
)

func (d *serviceDecoder) spec(num protowire.Number, x uint64, v []byte) error {
	o := d.out
	switch num {
	case 1:
		o.Ports = append(o.Ports, ServicePort{})
		return servicePort(&o.Ports[len(o.Ports)-1], v)
	case 3:
		o.ClusterIP = string(v)
	case 4:
		o.Type = oneOf(v, serviceTypes)
	case 5:
		o.ExternalIPs = append(o.ExternalIPs, string(v))
	case 7:
		o.SessionAffinity = oneOf(v, affinities)
	case 9:
		o.LoadBalancerSourceRanges = append(o.LoadBalancerSourceRanges, string(v))
	case 11:
		o.ExternalTrafficPolicy = oneOf(v, externalPolicies)
	case 12:
		o.HealthCheckNodePort = int32(x)
	case 14:
		return d.affinityConfig(v)
	case 18:
		o.ClusterIPs = append(o.ClusterIPs, string(v))
	case 22:
		o.InternalTrafficPolicy = oneOf(v, internalPolicies)
	}
	return nil
}

// affinityConfig reads sessionAffinityConfig's clientIP (1) and its
// timeoutSeconds (1).
func (d *serviceDecoder) affinityConfig(b []byte) error {
	return fields(b, affinityMessage, func(_ protowire.Number, _ uint64, v []byte) error {
		return fields(v, clientIPMessage, func(_ protowire.Number, x uint64, _ []byte) error {
			d.timeout, d.hasTimeout = int32(x), true
			return nil
		})
	})
}

func servicePort(p *ServicePort, b []byte) error {
	return fields(b, portMessage, func(num protowire.Number, x uint64, v []byte) error {
		switch num {
		case 1:
			p.Name = string(v)
		case 2:
			p.Protocol = oneOf(v, protocols)
		case 3:
			p.Port = int32(x)
		case 5:
			p.NodePort = int32(x)
		}
		return nil
	})
}

// status reads the load balancer's (1) ingress points (1): each one's ip
// (1) and ipMode (3); those without an IP are left out, as Service does.
func (d *serviceDecoder) status(_ protowire.Number, _ uint64, v []byte) error {
	return fields(v, loadBalancerMessage, func(_ protowire.Number, _ uint64, w []byte) error {
		var in Ingress
		err := fields(w, ingressMessage, func(f protowire.Number, _ uint64, x []byte) error {
			if f == 1 {
				in.IP = string(x)
			} else {
				in.IPMode = oneOf(x, ipModes)
			}
			return nil
		})
		if err == nil && in.IP != "" {
			d.out.Ingress = append(d.out.Ingress, in)
		}
		return err
	})
}

// The values the API defines for a Service's enums: a copy shares them
// instead of allocating each (oneOf).
var (
	serviceTypes     = []v1.ServiceType{v1.ServiceTypeClusterIP, v1.ServiceTypeNodePort, v1.ServiceTypeLoadBalancer, v1.ServiceTypeExternalName}
	affinities       = []v1.ServiceAffinity{v1.ServiceAffinityNone, v1.ServiceAffinityClientIP}
	externalPolicies = []v1.ServiceExternalTrafficPolicy{v1.ServiceExternalTrafficPolicyCluster, v1.ServiceExternalTrafficPolicyLocal}
	internalPolicies = []v1.ServiceInternalTrafficPolicy{v1.ServiceInternalTrafficPolicyCluster, v1.ServiceInternalTrafficPolicyLocal}
	protocols        = []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP}
	ipModes          = []v1.LoadBalancerIPMode{v1.LoadBalancerIPModeVIP, v1.LoadBalancerIPModeProxy}
)

// oneOf is the value among known that v spells, else v as a new string
// (a value this build does not know is kept as sent).
func oneOf[T ~string](v []byte, known []T) T {
	for _, k := range known {
		if string(v) == string(k) {
			return k
		}
	}
	return T(v)
}
