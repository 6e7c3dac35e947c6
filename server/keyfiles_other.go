//go:build !unix

package server

// keyFileExposure checks nothing where files have no Unix permissions.
func keyFileExposure(string) (string, error) { return "", nil }
