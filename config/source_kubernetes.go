package config

import (
	"strings"

	"github.com/fencegw/fencegw/internal/suggest"
	"github.com/fencegw/fencegw/tokens/source/kubesource"
)

// validateKubernetes checks the keys of kind kubernetes. All are
// optional: the in-cluster configuration (or $KUBECONFIG), namespace
// "default" and a Lease named after the resource.
func (s *EpochSource) validateKubernetes(bad func(field, format string, args ...any)) {
	if s.Kubeconfig != "" && strings.TrimSpace(s.Kubeconfig) == "" {
		bad("kubeconfig", "is blank: leave it out for the in-cluster configuration or $KUBECONFIG")
	}
	if s.Namespace != "" {
		if err := kubesource.CheckNamespace(s.Namespace); err != nil {
			bad("namespace", "%v", err)
		}
	}
	if s.Lease != "" {
		if err := kubesource.CheckLeaseTemplate(s.Lease); err != nil {
			bad("lease", "%v", err)
		}
	}
}

// didYouMean returns `; did you mean "k"?` for the k of known closest to
// got (at most two edits away, or a prefix of it), or "" for none.
func didYouMean(got string, known []string) string {
	g := strings.ToLower(strings.TrimSpace(got))
	if g == "" {
		return ""
	}
	best, bestD := "", 3
	for _, k := range known {
		if d := suggest.Distance(g, k); d < bestD || (strings.HasPrefix(k, g) && len(g) >= 3) {
			best, bestD = k, min(d, bestD)
		}
	}
	if a := kindAlias(g); a != "" {
		best = a
	}
	if best == "" || best == got {
		return ""
	}
	return `; did you mean "` + best + `"?`
}

// kindAlias returns the kind a short name people write stands for, or "".
func kindAlias(name string) string {
	switch name {
	case "pg", "postgresql":
		return "postgres"
	case "zk":
		return "zookeeper"
	case "k8s", "kube", "lease":
		return "kubernetes"
	}
	return ""
}
