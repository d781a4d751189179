//go:build !amd64 || race

package shm

import "sync/atomic"

// Without a cheaper release store for the architecture, or under the race
// detector (which sees the happens-before edges of sync/atomic only), a
// release store is sync/atomic's sequentially consistent store.

func storeRelease32(addr *int32, v int32) { atomic.StoreInt32(addr, v) }

func storeRelease64(addr *int64, v int64) { atomic.StoreInt64(addr, v) }

// storeRelease64PairPrefetch makes no prefetch: there is no assembly for
// it here, and a call to make one would cost what it saves.
func storeRelease64PairPrefetch(a *int64, av int64, b *int64, bv int64, _ int) {
	atomic.StoreInt64(a, av)
	atomic.StoreInt64(b, bv)
}
