// Package control is the gateway's control API: leases and their watches,
// fences, the audit's lists, JWKS, health, API keys and lease quotas, the
// browser guard, pprof.
package control
