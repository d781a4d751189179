// Package shm owns ferry's access to memory shared with the Aeron media
// driver: it maps files into the address space and reads and writes the
// mapped bytes through [Buffer], whose accessors check bounds and alignment.
//
// # What it owns
//
//   - Mapping and unmapping files ([Map], [Mapping.Close]).
//   - [Buffer]: a view of bytes (mapped, or ordinary Go memory from [Alloc]
//     or [Wrap]) with little-endian accessors (GetInt32, PutInt64, …) and
//     atomic accessors (LoadInt64, StoreInt32, CompareAndSwapInt64, …).
//
// It is the only package in ferry that imports unsafe or calls mmap. Every
// other package sees a [Buffer] and constant offsets.
//
// # What it must never do
//
// It never interprets the bytes: it knows no Aeron layout. It never exits
// the process and never logs.
//
// # Error policy
//
// Two kinds of offset reach a [Buffer], and they fail differently:
//
//  1. Offsets a package derives from its own layout constants and from
//     lengths it has already validated. A bad one is a bug in ferry, so the
//     fixed-width accessors (Get*, Put*, Load*, Store*, CompareAndSwap*,
//     Add*, Swap*, LoadWords, StoreWords), the word handles (Int32Word,
//     Int64Word) and [Buffer.Sub] panic with a message (a string, or an
//     error's text) that starts "assertion failed:" when the range is outside the
//     buffer, when an atomic access is misaligned (4 bytes for 32-bit, 8
//     bytes for 64-bit, checked on the real address), or when a write
//     targets a read-only mapping.
//  2. Offsets and lengths that come from bytes in shared memory (record
//     lengths, positions, counter ids). Callers must validate them first
//     with [Buffer.View] or [Buffer.CheckRange], which return a
//     [*RangeError] (errors.Is [ErrOutOfRange]), and check alignment with
//     [Buffer.CheckAlignment]. Input bytes must never reach a panic.
//
// # Memory ordering
//
// The atomic accessors are Go's sync/atomic operations, which are
// sequentially consistent. They therefore give at least the ordering of
// Agrona's "ordered"/"release" stores and "volatile"/"acquire" loads that the
// Java and C drivers use on the other side of the mapping. Callers document,
// at each use, which happens-before edge an atomic access creates.
//
// # Byte order
//
// Aeron stores integers in the host's native order and ferry runs on
// little-endian hosts only (amd64, arm64). The Get*/Put* accessors are
// little-endian; the atomic accessors use the native order. On a big-endian
// host the two disagree, and this package's tests fail.
//
// # Who may import it
//
// Only the packages under aeron/ (the Go Aeron client). Nothing outside
// aeron/ should see shared memory.
package shm
