package gateway

import "github.com/fencegw/fencegw/tokens"

// ownForwardingHeaders are the forwarding headers the proxy sets itself
// (httputil.ProxyRequest.SetXForwarded): as it spells them, and their
// tokens.HeaderKey.
var ownForwardingHeaders = [...][2]string{
	{"X-Forwarded-For", "x-forwarded-for"}, {"X-Forwarded-Host", "x-forwarded-host"}, {"X-Forwarded-Proto", "x-forwarded-proto"},
}

// actedOnHeaders are headers the gateway itself reads or sets, as it spells
// them and their tokens.HeaderKey: a twin in another spelling
// ("Idempotency_Key", "Fencing_Token") is one the gateway never acted on,
// while a CGI-style upstream reads it as the header itself.
var actedOnHeaders = [...][2]string{
	{"Idempotency-Key", "idempotency-key"}, {"Fencing-Token", "fencing-token"},
	{"Fencing-Epoch", "fencing-epoch"}, {"Fencing-Resource", "fencing-resource"},
}

// isUnfencedHeader reports whether the request header name must not reach
// the upstream because the fence never checked what it says: one of
// tokens.StrippedHeaders in any spelling, or a twin of a forwarding header
// the proxy sets or deletes ("X_Forwarded_Host" beside the proxy's
// X-Forwarded-Host, which CGI-style servers read as the same variable), or
// of a header the gateway acts on (actedOnHeaders).
// It does not allocate: it runs on every forwarded header.
func isUnfencedHeader(name string) bool {
	if name == "" {
		return false
	}
	switch name[0] | 0x20 {
	case 'x', 'f', 't', 'c', 'i':
	default:
		return false
	}
	for _, key := range tokens.StrippedHeaders {
		if tokens.SameHeaderKey(name, key) {
			return true
		}
	}
	if tokens.SameHeaderKey(name, "forwarded") || tokens.SameHeaderKey(name, "forwarded-for") {
		return true // the proxy deleted the client's own and sets none
	}
	for _, own := range ownForwardingHeaders {
		if name != own[0] && tokens.SameHeaderKey(name, own[1]) {
			return true
		}
	}
	for _, own := range actedOnHeaders {
		if name != own[0] && tokens.SameHeaderKey(name, own[1]) {
			return true
		}
	}
	return false
}
