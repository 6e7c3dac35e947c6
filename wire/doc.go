// Package wire holds the JSON forms of fencegw's HTTP contract that every
// side shares: the gateway that writes them, the leader client and the CLI
// that read them. openapi.yaml is their specification.
//
// wire imports nothing of fencegw: it is the lowest layer.
package wire
