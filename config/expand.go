package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// expandNode replaces ${NAME} in every scalar value of n by the environment
// variable NAME, and ${NAME:-default} by default when NAME is unset or
// empty; $$ stands for a literal $. Expansion happens after YAML parsing, so
// a value never changes the document's structure. An unset variable without
// a default is an error naming it and its line.
func expandNode(n *yaml.Node, lookup func(string) (string, bool)) error {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "$") {
		v, err := expand(n.Value, lookup)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		n.Value = v
		return nil
	}
	for _, c := range n.Content {
		if err := expandNode(c, lookup); err != nil {
			return err
		}
	}
	return nil
}

// expand expands one string; see expandNode.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "$$"):
			b.WriteByte('$')
			i++
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("unclosed ${ in %q", s)
			}
			expr := s[i+2 : i+end]
			name, def, hasDef := strings.Cut(expr, ":-")
			if !validEnvName(name) {
				return "", fmt.Errorf("${%s}: not a variable name", expr)
			}
			v, ok := lookup(name)
			switch {
			case ok && v != "":
				b.WriteString(v)
			case hasDef:
				b.WriteString(def)
			case ok:
				// set but empty, no default: empty
			default:
				return "", fmt.Errorf("${%s}: environment variable %s is not set", expr, name)
			}
			i += end
		default:
			b.WriteByte('$') // a lone $ stays as it is
		}
	}
	return b.String(), nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
