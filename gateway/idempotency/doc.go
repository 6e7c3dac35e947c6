// Package idempotency makes keyed writes (Idempotency-Key) happen at most
// once: a claim in the store before the write, its answer recorded after,
// and replayed to a retry.
package idempotency
