// Package pgstore is the PostgreSQL tokens.Store: the high-water marks live
// in one table of a PostgreSQL database, so any number of fencegw replicas
// can share them. The store is not Exclusive: every admission is decided by
// the database.
//
// Advance is a single conditional upsert, atomic in the database, so
// concurrent writers through any replica never lower an HWM. Reads and
// writes go to a primary only: connections to a server in recovery (a hot
// standby) are refused, whatever target_session_attrs the DSN asks for, so
// Current never answers from a replica that may lag. Sessions never run with
// synchronous_commit=off, so an admitted HWM survives a server crash; surviving
// a failover additionally needs synchronous replication, which is the
// operator's choice.
//
// Leases (tokens.LeaseStore) live in a second table, one row per name, and
// every deadline is decided by the database's clock (now()), never by the
// clocks of the processes that use the store. Acquire grants a lease and
// raises the HWM of the resource of the same name in one transaction, so a
// grant fences every earlier holder at once, and records the grant's epoch
// as the highest issued for that resource: from then on Advance refuses
// epochs above it with a *tokens.EpochNotIssuedError. Each grant records its
// caller's name as the lease's owner in the same transaction, and renew and
// release check the owner in the same statement that changes the lease, so
// the binding holds across replicas.
//
// Open creates or migrates the schema inside one transaction under an
// advisory lock, so replicas may start together. Once the schema is current,
// Open issues no DDL, so a role without CREATE privilege can run the store.
//
// Every failure other than a stale or unissued epoch, a held, lost or owned
// lease, an exhausted epoch space, a lease not found or an invalid argument
// is returned as a
// *tokens.UnavailableError wrapping the cause: the outcome is unknown and
// the caller must fail closed.
package pgstore
