package etcdstore

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// keySub holds the token authority's generated signing keys, beside the
// other records under the prefix (see doc.go).
const keySub = "\x00key/"

var _ tokens.KeyKeeper = (*Store)(nil)

// KeepKey stores key under name unless a key is stored there already, and
// returns the stored key: the first replica's generated key wins, and every
// replica signs with it. One Txn decides.
func (s *Store) KeepKey(ctx context.Context, name string, key []byte) ([]byte, error) {
	if s.conn.Closed() {
		return nil, &tokens.UnavailableError{Op: "keep key", Err: ErrClosed}
	}
	k := s.prefix + keySub + name
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(key))).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return nil, &tokens.UnavailableError{Op: "keep key", Err: err}
	}
	if resp.Succeeded {
		return key, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) != 1 {
		return nil, &tokens.UnavailableError{Op: "keep key", Err: fmt.Errorf("key %q vanished", name)}
	}
	return kvs[0].Value, nil
}
