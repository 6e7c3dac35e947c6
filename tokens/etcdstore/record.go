package etcdstore

import (
	"encoding/json"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// Sub-prefixes of the lease keys. Each starts with a NUL byte, which no
// resource name holds (tokens.ValidateResource refuses control characters),
// so prefix+sub+name never equals prefix+resource, the HWM key of any valid
// resource. Prefixes from ParseURL hold no control characters either, so the
// keys cannot fall under another store's prefix as one of its resources.
const (
	issuedSub = "\x00issued/"
	leaseSub  = "\x00lease/"
	aliveSub  = "\x00alive/"
	delaySub  = "\x00delay/"
	// renewedSub: a key each renewal writes, attached to the grant's etcd
	// lease, so that watchers see renewals (a keep-alive changes no key).
	renewedSub = "\x00renewed/"
)

func (s *Store) issuedKey(name string) string { return s.prefix + issuedSub + name }
func (s *Store) leaseKey(name string) string  { return s.prefix + leaseSub + name }
func (s *Store) aliveKey(name string) string  { return s.prefix + aliveSub + name }
func (s *Store) delayKey(name string) string  { return s.prefix + delaySub + name }
func (s *Store) renewedKey(name string) string {
	return s.prefix + renewedSub + name
}

// leaseRecord is the JSON value of a lease key: the latest grant of the
// lease. It is written only by Acquire, in the transaction that raises the
// HWM and the issued epoch, and is never deleted, so its epoch survives
// expiry and release. Whether the grant is still live is not recorded here:
// the alive key says so.
type leaseRecord struct {
	Holder    string `json:"holder"`
	Epoch     int64  `json:"epoch"`
	TTLMillis int64  `json:"ttl_ms"`
	// EtcdLease is the ID of the etcd lease the alive key is attached to.
	EtcdLease int64 `json:"etcd_lease"`
	// EtcdTTL is the TTL etcd granted, in seconds: the TTL, which is whole
	// seconds (records written before MinLeaseTTL was enforced may hold a
	// shorter TTL, raised here to the cluster's minimum).
	EtcdTTL int64 `json:"etcd_ttl_s"`
	// GrantedAt is the granting process's clock when it asked etcd for the
	// lease (RFC 3339, UTC). It is for operators only: no decision reads it.
	GrantedAt string `json:"granted_at"`
	// Owner is the Name of the tokens.Caller that acquired the grant;
	// absent for an unowned grant and in records written before owners
	// existed, which read as unowned.
	Owner string `json:"owner,omitempty"`
	// LockDelayMillis is the grant's lock-delay (absent: none). While it
	// is positive the grant also has a delay key, attached to DelayLease,
	// an etcd lease of EtcdTTL plus the delay rounded up to whole seconds
	// and kept alive with the grant's: it outlives the alive key by at
	// least the delay when the grant lapses.
	LockDelayMillis int64 `json:"lock_delay_ms,omitempty"`
	DelayLease      int64 `json:"delay_lease,omitempty"`
	// Released is set, and the delay key deleted, in one transaction by a
	// release of the live grant: a clean end, which skips the delay.
	Released bool `json:"released,omitempty"`
}

func (r leaseRecord) ttl() time.Duration { return time.Duration(r.TTLMillis) * time.Millisecond }

func (r leaseRecord) lockDelay() time.Duration {
	return time.Duration(r.LockDelayMillis) * time.Millisecond
}

// aliveValue is the JSON value of an alive key, which is attached to the
// grant's etcd lease and so exists exactly while that lease is live.
type aliveValue struct {
	Holder string `json:"holder"`
	Epoch  int64  `json:"epoch"`
}

// leaseState is what a linearizable read found about one lease: the record,
// the alive key and, when asked for, the HWM and issued keys, each with its
// ModRevision (0 when absent) so that a transaction can require that none of
// them changed since.
type leaseState struct {
	rec      leaseRecord
	found    bool // the record exists
	recRev   int64
	alive    bool // the alive key exists: the grant in rec is live
	aliveID  clientv3.LeaseID
	aliveRev int64
	delay    bool // the delay key exists: see leaseRecord.LockDelayMillis
	delayID  clientv3.LeaseID
	delayRev int64
	// renewedRev is the ModRevision of the renewed key (0: absent).
	renewedRev int64

	hwm, hwmRev       int64
	issued, issuedRev int64
}

// live reports whether the grant in st is live: its alive key exists and
// no release marked it (a release marks the record, then revokes the etcd
// lease; the grant ended at the mark).
func (st leaseState) live() bool { return st.alive && !st.rec.Released }

// readOps are the gets of a lease's record, alive and delay keys and, if
// withEpochs, of its HWM and issued keys, in the order parseState expects.
func (s *Store) readOps(name string, withEpochs bool) []clientv3.Op {
	ops := []clientv3.Op{clientv3.OpGet(s.leaseKey(name)), clientv3.OpGet(s.aliveKey(name)), clientv3.OpGet(s.delayKey(name)),
		clientv3.OpGet(s.renewedKey(name), clientv3.WithKeysOnly())}
	if withEpochs {
		ops = append(ops, clientv3.OpGet(s.key(name)), clientv3.OpGet(s.issuedKey(name)))
	}
	return ops
}

// parseState decodes the responses of readOps. A corrupt value, or a record
// and alive key that disagree, is an error wrapping ErrCorruptValue.
func (s *Store) parseState(name string, withEpochs bool, resps []*pb.ResponseOp) (leaseState, error) {
	want := 4
	if withEpochs {
		want = 6
	}
	kvs, err := ranges(resps, want)
	if err != nil {
		return leaseState{}, err
	}
	var st leaseState
	if len(kvs[0]) > 0 {
		kv := kvs[0][0]
		if st.rec, err = decodeRecord(kv); err != nil {
			return leaseState{}, err
		}
		st.found, st.recRev = true, kv.ModRevision
	}
	if len(kvs[1]) > 0 {
		kv := kvs[1][0]
		if err := checkAlive(kv, st); err != nil {
			return leaseState{}, err
		}
		st.alive, st.aliveID, st.aliveRev = true, clientv3.LeaseID(kv.Lease), kv.ModRevision
	}
	if len(kvs[2]) > 0 {
		kv := kvs[2][0]
		if err := checkDelay(kv, st); err != nil {
			return leaseState{}, err
		}
		st.delay, st.delayID, st.delayRev = true, clientv3.LeaseID(kv.Lease), kv.ModRevision
	}
	if len(kvs[3]) > 0 {
		st.renewedRev = kvs[3][0].ModRevision
	}
	if withEpochs {
		if st.hwm, st.hwmRev, err = readEpoch(s.key(name), kvs[4]); err != nil {
			return leaseState{}, err
		}
		if st.issued, st.issuedRev, err = readEpoch(s.issuedKey(name), kvs[5]); err != nil {
			return leaseState{}, err
		}
	}
	return st, nil
}

// ranges returns the key-values of want range responses.
func ranges(resps []*pb.ResponseOp, want int) ([][]*mvccpb.KeyValue, error) {
	if len(resps) != want {
		return nil, fmt.Errorf("transaction returned %d responses, want %d", len(resps), want)
	}
	out := make([][]*mvccpb.KeyValue, want)
	for i, r := range resps {
		rr := r.GetResponseRange()
		if rr == nil {
			return nil, fmt.Errorf("transaction response %d is not a range: %v", i, r)
		}
		out[i] = rr.Kvs
	}
	return out, nil
}

func encodeRecord(r leaseRecord) string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("etcdstore: encoding lease record: %v", err)) // strings and ints only
	}
	return string(b)
}

func encodeAlive(holder string, epoch int64) string {
	b, err := json.Marshal(aliveValue{Holder: holder, Epoch: epoch})
	if err != nil {
		panic(fmt.Sprintf("etcdstore: encoding alive value: %v", err))
	}
	return string(b)
}

// decodeRecord parses a lease key. Unknown fields are ignored, so that a
// later version may add some; missing or invalid required ones are
// corruption.
func decodeRecord(kv *mvccpb.KeyValue) (leaseRecord, error) {
	var r leaseRecord
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		return leaseRecord{}, corrupt(kv, fmt.Sprintf("not a lease record: %v", err))
	}
	switch {
	case validHolder(r.Holder) != nil:
		return leaseRecord{}, corrupt(kv, "invalid holder")
	case r.Epoch <= 0:
		return leaseRecord{}, corrupt(kv, "epoch not positive")
	case tokens.ValidateTTL(r.ttl()) != nil:
		return leaseRecord{}, corrupt(kv, "ttl_ms out of range")
	case r.EtcdLease == 0:
		return leaseRecord{}, corrupt(kv, "no etcd lease")
	case tokens.ValidateOwner(r.Owner) != nil:
		return leaseRecord{}, corrupt(kv, "invalid owner")
	case r.LockDelayMillis < 0 || r.lockDelay() > tokens.MaxLockDelay:
		return leaseRecord{}, corrupt(kv, "lock_delay_ms out of range")
	case r.LockDelayMillis > 0 && r.DelayLease == 0:
		return leaseRecord{}, corrupt(kv, "lock-delay without a delay lease")
	}
	return r, nil
}

// checkAlive checks an alive key against the record read with it: both are
// written in one transaction, so while the alive key exists they name the
// same holder, epoch and etcd lease.
func checkAlive(kv *mvccpb.KeyValue, st leaseState) error {
	return checkAttached(kv, st, "alive", st.rec.EtcdLease)
}

// checkDelay checks a delay key against the record read with it, as
// checkAlive does an alive key.
func checkDelay(kv *mvccpb.KeyValue, st leaseState) error {
	return checkAttached(kv, st, "delay", st.rec.DelayLease)
}

// checkAttached checks a key of kind (alive, delay) written with st's
// record: it names the record's holder and epoch and is attached to the
// record's etcd lease want.
func checkAttached(kv *mvccpb.KeyValue, st leaseState, kind string, want int64) error {
	var a aliveValue
	if err := json.Unmarshal(kv.Value, &a); err != nil {
		return corrupt(kv, fmt.Sprintf("not a valid %s value: %v", kind, err))
	}
	switch {
	case !st.found:
		return corrupt(kv, kind+" key without a lease record")
	case a.Holder != st.rec.Holder || a.Epoch != st.rec.Epoch:
		return corrupt(kv, fmt.Sprintf("names %q at epoch %d, the record %q at epoch %d", a.Holder, a.Epoch, st.rec.Holder, st.rec.Epoch))
	case kv.Lease == 0 || kv.Lease != want:
		return corrupt(kv, fmt.Sprintf("attached to etcd lease %x, the record names %x", kv.Lease, want))
	}
	return nil
}

func validHolder(h string) error {
	if h == "" || len(h) > tokens.MaxHolderLen {
		return fmt.Errorf("holder must be 1 to %d bytes", tokens.MaxHolderLen)
	}
	return tokens.ValidateResource(h)
}

func corrupt(kv *mvccpb.KeyValue, why string) error {
	q := kv.Value
	if len(q) > maxQuoted {
		q = q[:maxQuoted]
	}
	return fmt.Errorf("%w: key %q holds %q (%d bytes): %s", ErrCorruptValue, kv.Key, q, len(kv.Value), why)
}

// unchanged is the transaction condition that key's ModRevision is still
// rev; a rev of 0 means the key is still absent (etcd compares an absent
// key's revisions as 0).
func unchanged(key string, rev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(key), "=", rev)
}
