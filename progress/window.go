package progress

// Window bounds what the replay of one recording may have read and not yet seen committed:
// the records the tracker holds, in the publisher's queue or in Pulsar's hands (the
// replay's credits, inflight.max_messages and inflight.max_bytes). Both bounds are positive.
type Window struct {
	Records, Bytes int64
}

// Readable returns how many records the replay may read now, given how many records and
// bytes it has read that are not committed yet; 0 means wait for credits.
//
// While anything is in flight, reading resumes only once a quarter of the window is free
// again. Resuming at the first free record would, under a full window, move the pipeline
// one record at a time: every acknowledgement would release one credit, one read of one
// record (of its first fragment only, for a fragmented one), one batch of one through every
// actor. A quarter keeps batches large while three quarters stay in flight, which is what
// keeps the broker busy. With nothing in flight, any free room is read.
//
// The records returned bound a read in records; the replay bounds it in bytes by the room
// left (a bounded poll), so the byte bound is overshot by less than one record: the one
// whose fragments straddle it, which the read completes.
func (w Window) Readable(inflightRecords, inflightBytes int64) int64 {
	freeRecords := w.Records - inflightRecords
	freeBytes := w.Bytes - inflightBytes
	switch {
	case freeRecords <= 0 || freeBytes <= 0:
		return 0
	case inflightRecords > 0 && (freeRecords < w.Records/4 || freeBytes < w.Bytes/4):
		return 0
	}
	return freeRecords
}

// ReportDue tells whether the room released since the replay was last told of it —
// records and bytes whose outcome arrived — is worth a message to the replay now, with
// pending records still awaiting theirs. The replay reads again only once a quarter of the
// window is free (Readable): telling it of every record as it is released would wake it
// for nothing nearly every time. A sixteenth of the window, in records or in bytes, keeps
// it at most that late; with nothing pending, any release is told, so that the replay never
// waits for room it has.
func (w Window) ReportDue(releasedRecords, releasedBytes int64, pendingRecords int) bool {
	switch {
	case releasedRecords <= 0 && releasedBytes <= 0:
		return false
	case pendingRecords == 0:
		return true
	}
	return releasedRecords >= w.Records/16 || releasedBytes >= w.Bytes/16
}
