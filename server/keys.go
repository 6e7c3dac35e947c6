package server

import (
	"encoding/hex"
	"strings"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
)

// apiKeys turns the validated API keys into the control API's.
func apiKeys(c config.Config) gateway.APIKeys {
	var ks gateway.APIKeys
	for _, k := range c.APIKeys {
		var h [32]byte
		b, _ := hex.DecodeString(strings.ToLower(k.SHA256))
		copy(h[:], b)
		ks = append(ks, gateway.APIKey{Name: k.Name, Hash: h, Leases: k.Leases, Admin: k.Admin, MaxLeases: k.MaxLeases})
	}
	return ks
}
