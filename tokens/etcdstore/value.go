package etcdstore

import (
	"errors"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/fencegw/fencegw/tokens"
)

// ErrCorruptValue means a key the store reads holds something it cannot
// parse: an HWM or issued key that is not a positive decimal int64, a lease
// record or alive key that is not valid JSON of the expected shape, or a
// lease record and alive key that disagree. The store wraps it, inside a
// *tokens.UnavailableError, instead of guessing: a corrupt key is never read
// as absent or as 0.
var ErrCorruptValue = errors.New("etcdstore: corrupt stored value")

// maxQuoted is how many bytes of a corrupt value an error message quotes.
const maxQuoted = 40

// encodeEpoch is the stored form of epoch: its decimal digits.
func encodeEpoch(epoch int64) string {
	return strconv.FormatInt(epoch, 10)
}

// decodeEpoch parses the stored value of key. Anything but a positive decimal
// int64 (as tokens.ParseEpoch accepts it) is an error wrapping
// ErrCorruptValue. The parser's own error is quoted, not wrapped, so that a
// corrupt store value never matches tokens.ErrMalformedToken, which means a
// bad token from a client.
func decodeEpoch(key string, value []byte) (int64, error) {
	epoch, err := tokens.ParseEpoch(string(value))
	if err != nil {
		q := value
		if len(q) > maxQuoted {
			q = q[:maxQuoted]
		}
		return 0, fmt.Errorf("%w: key %q holds %q (%d bytes): %v", ErrCorruptValue, key, q, len(value), err)
	}
	return epoch, nil
}

// readEpoch reads the result of a single-key Get of key, an HWM or issued
// key: the epoch and the key's ModRevision, or 0 and 0 when the key is
// absent.
func readEpoch(key string, kvs []*mvccpb.KeyValue) (epoch, rev int64, err error) {
	if len(kvs) == 0 {
		return 0, 0, nil
	}
	epoch, err = decodeEpoch(key, kvs[0].Value)
	if err != nil {
		return 0, 0, err
	}
	return epoch, kvs[0].ModRevision, nil
}
