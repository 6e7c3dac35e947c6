package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/tokens"
)

// idemQueries is the SQL of the idempotency records, for the table t.
type idemQueries struct {
	// claim inserts record $3 (claim $4) for resource $1 and key $2,
	// expiring in $5 ms, or replaces an expired one; it returns a row only
	// when it wrote.
	claim string
	// get reads the live record of $1, $2.
	get string
	// settle replaces the pending record of $1, $2 claimed by $3 with
	// record $4 in state $5.
	settle string
	// forget deletes the pending record of $1, $2 claimed by $3.
	forget string
	// purge deletes up to $1 expired records.
	purge string
	// drop deletes the record of $1, $2, whatever its state.
	drop string
}

func newIdemQueries(t string) idemQueries {
	return idemQueries{
		claim: `INSERT INTO ` + t + ` AS i (resource, key, record, claim, state, expires_at)
VALUES ($1, $2, $3, $4, 'pending', now() + $5::bigint * interval '1 millisecond')
ON CONFLICT (resource, key) DO UPDATE
SET record = EXCLUDED.record, claim = EXCLUDED.claim, state = EXCLUDED.state, expires_at = EXCLUDED.expires_at
WHERE i.expires_at <= now()
RETURNING true`,
		get:    `SELECT record FROM ` + t + ` WHERE resource = $1 AND key = $2 AND expires_at > now()`,
		settle: `UPDATE ` + t + ` SET record = $4, state = $5 WHERE resource = $1 AND key = $2 AND claim = $3 AND state = 'pending'`,
		forget: `DELETE FROM ` + t + ` WHERE resource = $1 AND key = $2 AND claim = $3 AND state = 'pending'`,
		purge:  `DELETE FROM ` + t + ` WHERE ctid IN (SELECT ctid FROM ` + t + ` WHERE expires_at <= now() LIMIT $1)`,
		drop:   `DELETE FROM ` + t + ` WHERE resource = $1 AND key = $2 AND expires_at > now()`,
	}
}

// ClaimKey creates rec unless a live record is there, in one statement;
// see tokens.IdempotencyStore. Expiry is on the database's clock.
func (s *Store) ClaimKey(ctx context.Context, resource, key string, rec tokens.IdemRecord, ttl time.Duration) (tokens.IdemRecord, bool, error) {
	if err := validIdem(resource, key); err != nil {
		return tokens.IdemRecord{}, false, err
	}
	v, err := json.Marshal(rec)
	if err != nil {
		return tokens.IdemRecord{}, false, err
	}
	// A record read as live may expire (and be purged) before it is read
	// again: claim once more then.
	for attempt := 0; attempt < 3; attempt++ {
		var wrote bool
		err := s.pool.QueryRow(ctx, s.iq.claim, resource, key, v, rec.Claim, ttl.Milliseconds()).Scan(&wrote)
		switch {
		case err == nil:
			return rec, true, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return tokens.IdemRecord{}, false, &tokens.UnavailableError{Op: "claim", Resource: resource, Err: err}
		}
		var stored []byte
		err = s.pool.QueryRow(ctx, s.iq.get, resource, key).Scan(&stored)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue
		case err != nil:
			return tokens.IdemRecord{}, false, &tokens.UnavailableError{Op: "claim", Resource: resource, Err: err}
		}
		var got tokens.IdemRecord
		if err := json.Unmarshal(stored, &got); err != nil {
			return tokens.IdemRecord{}, false, &tokens.UnavailableError{Op: "claim", Resource: resource,
				Err: fmt.Errorf("corrupt idempotency record: %w", err)}
		}
		return got, false, nil
	}
	return tokens.IdemRecord{}, false, &tokens.UnavailableError{Op: "claim", Resource: resource,
		Err: errors.New("the record kept expiring between claim and read")}
}

// SettleKey settles claim's pending record; see tokens.IdempotencyStore.
func (s *Store) SettleKey(ctx context.Context, resource, key, claim string, rec *tokens.IdemRecord) error {
	if err := validIdem(resource, key); err != nil {
		return err
	}
	var (
		n   int64
		err error
	)
	if rec == nil {
		tag, e := s.pool.Exec(ctx, s.iq.forget, resource, key, claim)
		n, err = tag.RowsAffected(), e
	} else {
		v, e := json.Marshal(rec)
		if e != nil {
			return e
		}
		tag, e := s.pool.Exec(ctx, s.iq.settle, resource, key, claim, v, string(rec.State))
		n, err = tag.RowsAffected(), e
	}
	switch {
	case err != nil:
		return &tokens.UnavailableError{Op: "settle", Resource: resource, Err: err}
	case n == 0:
		return tokens.ErrClaimLost
	}
	return nil
}

// PurgeKeys deletes up to limit expired records; see
// tokens.IdempotencyStore.
func (s *Store) PurgeKeys(ctx context.Context, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, s.iq.purge, limit)
	if err != nil {
		return 0, &tokens.UnavailableError{Op: "purge", Err: err}
	}
	return int(tag.RowsAffected()), nil
}

// ForgetKey deletes the live record of resource and key; see
// tokens.IdempotencyStore.
func (s *Store) ForgetKey(ctx context.Context, resource, key string) (bool, error) {
	if err := validIdem(resource, key); err != nil {
		return false, err
	}
	tag, err := s.pool.Exec(ctx, s.iq.drop, resource, key)
	if err != nil {
		return false, &tokens.UnavailableError{Op: "forget", Resource: resource, Err: err}
	}
	return tag.RowsAffected() == 1, nil
}

func validIdem(resource, key string) error {
	if err := tokens.ValidateResource(resource); err != nil {
		return err
	}
	return tokens.ValidateIdemKey(key)
}
