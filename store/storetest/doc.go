// Package storetest is the contract suite every [store.Store] implementation must pass.
//
// An implementation's test calls [Run] with a constructor that returns a fresh, empty
// store and registers its Close with t.Cleanup, and a way to open that store's storage
// again after a close, as a restart does (nil if it cannot be: the case that needs it is
// skipped, saying why). The suite owns nothing else: it performs I/O only through the store under test, starts goroutines only inside one subtest and
// waits for them, and never sleeps.
//
// Subtests named LessonNN_… are the store's share of the lesson of that number in
// lessons.md. Implementation-specific failures (a damaged file, a held lock) cannot be
// produced through the interface; each implementation tests those itself.
package storetest
