package pgstore

// queries is the SQL of a Store, built once by Open for its schema. Every
// time is the database's: now() is the start of the statement's transaction
// on the server's clock, never the Go process's.
type queries struct {
	// current reads the HWM of $1.
	current string
	// marks reads the HWM and the highest issued epoch of $1.
	marks string
	// mark reads the HWM of $1 and the life of the lease of that name:
	// its epoch (0: none), microseconds left (0 once it ended), and
	// whether it was released.
	mark string
	// advance raises the HWM of $1 to $2 unless $2 is below it or above
	// the highest issued epoch (when one was issued), returning the new
	// HWM; it returns no row when it refuses.
	advance string

	// leaseCreate inserts lease $1 for holder $2 with ttl_ms $3 if it does
	// not exist, returning a row only if it did not. The row is a
	// placeholder that the same transaction overwrites with leaseGrant, so
	// no other session ever sees its values; it locks the name meanwhile.
	leaseCreate string
	// leaseLock reads lease $1 and locks its row, and the milliseconds its
	// lock-delay still runs (0 or less: none).
	leaseLock string
	// fenceGrant raises the HWM of $1 to max(HWM+1, $2) and records it as
	// the highest issued epoch, returning it; it locks the HWM row, and
	// returns no row when the HWM is already 2^63-1.
	fenceGrant string
	// leaseGrant gives lease $1 to holder $2 at epoch $3 for ttl_ms $4,
	// owned by $5, with lock_delay_ms $6.
	leaseGrant string
	// leaseGet reads lease $1.
	leaseGet string
	// renew extends lease $1 of holder $2 at epoch $3 if it is live and
	// caller $4 may use it: $5 (admin) is true, or the lease is unowned or
	// owned by $4.
	renew string
	// release ends lease $1 of holder $2 at epoch $3 now, unless it ended,
	// if caller $4 may use it (as for renew, $5 admin); a release of a
	// live lease marks it released.
	release string

	// keyKeep stores key $2 under name $1 unless one is stored there.
	keyKeep string
	// keyGet reads the key stored under name $1.
	keyGet string
}

// maxEpoch is 2^63-1, the highest epoch, in SQL.
const maxEpoch = "9223372036854775807"

// leaseColumns are the columns scanLease reads, Held computed by the
// database in the same statement.
const leaseColumns = `holder, epoch, ttl_ms, expires_at, expires_at > now(), owner, lock_delay_ms, released, version`

// delayLeftMS is the SQL of how many milliseconds a lease's lock-delay
// still runs (0 or less: none): only after a lapse that was no release.
const delayLeftMS = `CASE WHEN released OR expires_at > now() THEN 0
	ELSE ceil(extract(epoch FROM expires_at + lock_delay_ms * interval '1 millisecond' - now()) * 1000)::bigint END`

// mayUse is the SQL of tokens.Caller.MayUse for caller $4, admin $5.
const mayUse = `($5::boolean OR owner = '' OR owner = $4::text)`

func newQueries(o *options) queries {
	hwm, lease, key := o.ident(hwmTable), o.ident(leaseTable), o.ident(keyTable)
	return queries{
		keyKeep: `INSERT INTO ` + key + ` (name, key) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
		keyGet:  `SELECT key FROM ` + key + ` WHERE name = $1`,

		current: `SELECT epoch FROM ` + hwm + ` WHERE resource = $1`,
		marks:   `SELECT epoch, issued FROM ` + hwm + ` WHERE resource = $1`,
		// floor: Left is a lower bound. GREATEST: 0 once it ended.
		// A reclaimed lease (no row) reads as its issued grant, lapsed.
		mark: `SELECT h.epoch, coalesce(l.epoch, h.issued),
	coalesce(floor(extract(epoch FROM GREATEST(l.expires_at, now()) - now()) * 1000000)::bigint, 0),
	coalesce(l.released, false)
FROM ` + hwm + ` h LEFT JOIN ` + lease + ` l ON l.name = h.resource
WHERE h.resource = $1`,
		advance: `INSERT INTO ` + hwm + ` AS h (resource, epoch) VALUES ($1, $2)
ON CONFLICT (resource) DO UPDATE SET epoch = EXCLUDED.epoch, updated_at = now()
WHERE h.epoch <= EXCLUDED.epoch AND (h.issued = 0 OR EXCLUDED.epoch <= h.issued)
RETURNING h.epoch`,

		leaseCreate: `INSERT INTO ` + lease + ` (name, holder, epoch, ttl_ms, expires_at, granted_at)
VALUES ($1, $2, 1, $3, '-infinity', now())
ON CONFLICT (name) DO NOTHING
RETURNING true`,
		leaseLock: `SELECT ` + leaseColumns + `, ` + delayLeftMS + ` FROM ` + lease + ` WHERE name = $1 FOR UPDATE`,
		// ON CONFLICT evaluates its WHERE before SET, so h.epoch + 1 never
		// overflows; a concurrent first insert of the row is waited for and
		// then updated, so no raw Advance can slip a higher HWM in.
		fenceGrant: `INSERT INTO ` + hwm + ` AS h (resource, epoch, issued) VALUES ($1, $2, $2)
ON CONFLICT (resource) DO UPDATE
SET epoch = GREATEST(h.epoch + 1, EXCLUDED.epoch), issued = GREATEST(h.epoch + 1, EXCLUDED.epoch), updated_at = now()
WHERE h.epoch < ` + maxEpoch + `
RETURNING h.epoch`,
		leaseGrant: `UPDATE ` + lease + `
SET holder = $2, epoch = $3, ttl_ms = $4, expires_at = now() + $4::bigint * interval '1 millisecond', granted_at = now(),
	owner = $5, lock_delay_ms = $6, released = false, version = version + 1
WHERE name = $1
RETURNING ` + leaseColumns,
		leaseGet: `SELECT ` + leaseColumns + ` FROM ` + lease + ` WHERE name = $1`,
		// GREATEST: a renewal never shortens a lease, even if the
		// database's clock stepped back since the last one.
		renew: `UPDATE ` + lease + `
SET expires_at = GREATEST(expires_at, now() + ttl_ms * interval '1 millisecond'), version = version + 1
WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_at > now() AND ` + mayUse + `
RETURNING ` + leaseColumns,
		// Every SET expression sees the row as it was: released records
		// whether it was live when released.
		release: `UPDATE ` + lease + ` SET expires_at = LEAST(expires_at, now()), released = released OR expires_at > now(),
	version = version + 1
WHERE name = $1 AND holder = $2 AND epoch = $3 AND ` + mayUse,
	}
}
