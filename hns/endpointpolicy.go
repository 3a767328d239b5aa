package hns

import "encoding/json"

// rawSettings keeps an endpoint policy's settings as raw JSON, as hcn does.
type rawSettings = json.RawMessage

// providerAddressPolicyType is hcn.NetworkProviderAddress.
const providerAddressPolicyType = "ProviderAddress"

// providerAddressPolicy is the endpoint policy that sends traffic for a
// remote endpoint of an overlay network to its node.
func providerAddressPolicy(pa string) EndpointPolicy {
	b, _ := json.Marshal(ProviderAddressSettings{ProviderAddress: pa})
	return EndpointPolicy{Type: providerAddressPolicyType, Settings: b}
}
