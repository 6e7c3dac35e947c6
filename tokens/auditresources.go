package tokens

import (
	"context"
	"slices"
	"strings"
)

// AuditResourceQuery selects the distinct resource names (and lease
// names) of the whole audit, every stream, in byte order.
type AuditResourceQuery struct {
	// Prefix keeps the names that begin with it.
	Prefix string
	// After, when not empty, keeps the names above it: the last name of
	// the page before.
	After string
	// Limit is the most names returned (at least 1).
	Limit int
}

// AuditResourceLister is implemented by every AuditStore: the audit's
// resources, read from its index.
type AuditResourceLister interface {
	// ListAuditResources returns up to q.Limit distinct names selected by
	// q, lowest first.
	ListAuditResources(ctx context.Context, q AuditResourceQuery) ([]string, error)
}

// ListAuditResourcesBy answers q from the resource indexes of every
// stream (AuditStreams: junk entries name no resource, so they add no
// name): first(stream, seek) returns the first index key of stream's
// index (AuditIndexKeys' keys) at or above seek, or "" when none. It
// seeks once per name, never reading a resource's entries.
func ListAuditResourcesBy(q AuditResourceQuery, first func(stream AuditStream, seek string) (string, error)) ([]string, error) {
	var out []string
	for _, stream := range AuditStreams() {
		seek := auditIndexSeek("r", q.Prefix)
		if q.After != "" {
			seek = max(seek, auditIndexAfter("r", q.After))
		}
		for n := 0; n < q.Limit; {
			key, err := first(stream, seek)
			if err != nil || key == "" {
				if err != nil {
					return nil, err
				}
				break
			}
			name, ok := auditIndexValue("r", key)
			if !ok || !strings.HasPrefix(name, q.Prefix) {
				break
			}
			// No name: a junk entry (or a refusal) that named no
			// resource. It is skipped, and takes no name's place in
			// the page.
			if name != "" {
				out = append(out, name)
				n++
			}
			seek = auditIndexAfter("r", name)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return out[:min(len(out), q.Limit)], nil
}
