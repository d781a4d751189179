// Package logbuffer implements Aeron log buffers (aeron-protocol.md §5-7):
// the shared-memory files through which a publication's frames travel to
// subscriptions. It is the data path of ferry's Aeron client.
//
// # What it owns
//
//   - The layouts (layout.go): the file (three term partitions and a
//     metadata section at the end), the metadata fields, the 32-byte data
//     frame header, [FrameType] and [Flags].
//   - Position arithmetic (position.go): raw tails, term ids, term offsets
//     and partitions of a stream position, term ids wrapping around.
//   - [Log]: a validated log file or buffer and its metadata accessors.
//   - [ExclusiveAppender]: the single writer of an exclusive publication,
//     with fragmentation, padding and term rotation.
//   - [Log.Poll] and [Log.ControlledPoll]: the subscriber side of an image,
//     reading one term from a given subscriber position.
//   - [FragmentAssembler] and [ControlledFragmentAssembler]: reassembly of
//     fragmented messages across polls.
//   - The driver's side of a log ([InitMetadata], [Log.SetIsConnected],
//     [Log.SetEndOfStreamPosition]), for tests and in-process fakes only.
//
// # What it must never do
//
// It never touches a counter, the CnC file or the driver: the publication
// limit and is-connected flag come in as a [Flow], the subscriber position
// comes in as an argument and the new one goes back as a result. It never
// blocks, sleeps, retries or starts a goroutine. It never panics on the
// contents of shared memory: an inconsistent log is an [ErrInvalidLog], a
// corrupt frame an [ErrCorrupt], a bad position an [ErrInvalidPosition].
// Panics ("assertion failed: …") are reserved for bugs in ferry, such as a
// partition index out of range. It uses no unsafe: all shared memory goes
// through [shm.Buffer].
//
// # Callers must
//
// To publish:
//
//  1. [Open] the log named in PUBLICATION_READY and create one
//     [ExclusiveAppender] for it, owned by one goroutine.
//  2. Before each offer, read the publication-limit counter (acquire) and
//     [Log.IsConnected] into a [Flow].
//  3. On [AdminAction], offer again at once; on [BackPressured] or
//     [NotConnected], back off and retry; on [MaxPositionExceeded], close
//     the publication.
//
// To subscribe:
//
//  1. [Open] the log named in AVAILABLE_IMAGE and start from the join
//     position (the subscriber-position counter).
//  2. Call [Log.Poll] or [Log.ControlledPoll] with the current position,
//     then store the returned position in the subscriber-position counter
//     with a release store: that is what lets the driver reuse the space.
//     Track that position, not the last header delivered: padding moves it
//     without a fragment.
//  3. Pass fragments through one [FragmentAssembler] per image that lives
//     as long as the image, and copy any payload kept beyond the handler.
//  4. Keep the mapping for the resource linger time after the image goes
//     away before [Log.Close]: another goroutine may still be polling.
//
// # Who may import it
//
// Packages under aeron/ only.
package logbuffer
