package config

import _ "embed"

// Example is an annotated configuration that names every key; it validates.
//
//go:embed example.yaml
var Example string
