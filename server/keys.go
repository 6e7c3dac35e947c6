package server

import (
	"encoding/hex"
	"strings"

	"github.com/fencegw/fencegw/gateway/control"

	"github.com/fencegw/fencegw/config"
)

// apiKeys turns the validated API keys into the control API's.
func apiKeys(c config.Config) control.APIKeys {
	var ks control.APIKeys
	for _, k := range c.APIKeys {
		var h [32]byte
		b, _ := hex.DecodeString(strings.ToLower(k.SHA256))
		copy(h[:], b)
		ks = append(ks, control.APIKey{Name: k.Name, Hash: h, Leases: k.Leases, Admin: k.Admin, MaxLeases: k.MaxLeases})
	}
	return ks
}
