// Package policy holds fencegw's routes: which requests go to which
// upstream, which of them are fenced, and how each names its resource.
package policy
