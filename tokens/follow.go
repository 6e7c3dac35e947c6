package tokens

import "context"

// FollowChanges implements LeaseWatcher.WatchLease for a store that keeps
// a log of changes and notifies of new ones: notes must be subscribed
// before the call, so that no change lands between a read and the wait.
// It reads the changes after after (with after FromLatest, the first read
// asks for the latest only: latest set, after 0), sends them in order, and
// reads again after every notification, until ctx ends or a read fails;
// then it closes the channel. A change with Gap set is sent whatever its
// Seq (read must set it only on the latest change, when it cannot send
// what follows after: see LeaseWatcher), and the watch goes on from it.
func FollowChanges(ctx context.Context, notes <-chan struct{}, after int64,
	read func(ctx context.Context, after int64, latest bool) ([]LeaseChange, error)) <-chan LeaseChange {
	out := make(chan LeaseChange)
	go func() {
		defer close(out)
		latest := after < 0
		after = max(after, 0)
		for {
			changes, err := read(ctx, after, latest)
			if err != nil {
				return
			}
			latest = false
			for _, c := range changes {
				if c.Seq <= after && !c.Gap {
					continue // never send a change twice, nor out of order
				}
				select {
				case out <- c:
					after = c.Seq
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-notes:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
