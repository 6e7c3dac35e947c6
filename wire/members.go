package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrMembers is wrapped by every error of CheckMembers.
var ErrMembers = errors.New("ambiguous JSON member")

// CheckMembers checks the member names of the JSON object b against the
// names a request type knows. encoding/json matches a member to a field
// case-insensitively and keeps the last of two members of one name, so
// {"epoch":8,"Epoch":7} would mean epoch 7 to the gateway and may mean 8 to
// a proxy or firewall in front of it that reads names exactly or keeps the
// first. CheckMembers refuses, with an error wrapping ErrMembers, a member
// whose name equals a known name only under case folding, and a known name
// that appears more than once. Unknown names are left to the decoder's
// DisallowUnknownFields; b that is not a JSON object is left to it too.
func CheckMembers(b []byte, known ...string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	seen := make(map[string]bool, len(known))
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil // malformed: the decoder says how
		}
		name, _ := t.(string)
		for _, k := range known {
			switch {
			case !strings.EqualFold(name, k):
				continue
			case name != k:
				return fmt.Errorf("%w: %.40q differs from %s only in case", ErrMembers, name, k)
			case seen[k]:
				return fmt.Errorf("%w: %s appears more than once", ErrMembers, k)
			}
			seen[k] = true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}
