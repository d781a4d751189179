package actors

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/aeron/channel"
	"github.com/ferry-bridge/ferry/messages"
)

// discoveryPageSize is how many descriptors one listing request asks for.
const discoveryPageSize = 100

// listingShare bounds the share of the archive's control session the listings take: after
// a listing the next waits at least (1/listingShare - 1) times as long as it took. A listing
// reads the stream's whole catalog, which grows with every publisher restart (the archive
// keeps recordings until they are purged): about 27 µs a recording measured here, so at
// 10,000 recordings one takes longer than the 250 ms interval, and the listings would hold
// the session — which the stream's replays and every other stream share — all the time. A
// failed listing is retried at the interval: its time (up to the call timeout) is not the
// catalog's. Nor is the pause ever longer than listingPauseMax intervals (10 s at the
// default 250 ms): a listing slowed by something else (requests queued on the session, a
// stalled archive, a paused process) must not keep new, stopped and vanished recordings
// unseen for four times as long.
const (
	listingShare    = 0.2
	listingPauseMax = 40
)

// discovery is the Discovery actor of one stream: every DiscoveryInterval (longer when
// listings take long: listingShare) it lists the archive's recordings of the stream's
// channel and stream id (listRecordingsForUri, paging past the highest id returned, lesson
// 6) on its goroutine and reports the whole list, in id order, to the stream supervisor, or
// the failure. One listing is in flight at a time.
//
// Its mailbox holds one listing result and one timer message.
type discovery struct {
	env *Env
	cfg *StreamConfig

	cancel context.CancelFunc
	// recordedFailing: the last listing could not read a live recording's recorded position
	// (warned once a streak).
	recordedFailing bool
	// unselected is the last warned set of channels of the stream id's recordings the
	// configured channel selects none of (noteUnselected), "" when it selects some or there
	// are none: warned once a distinct set.
	unselected string
}

// listResult and listAgain name the incarnation that asked for them (by). Mailbox and PID
// survive a restart, and an earlier incarnation's, handled by the next, would run a listing
// loop of their own beside the new one's.
type listResult struct {
	by    *discovery
	descs []archive.RecordingDescriptor
	// others are the recordings of the stream id on the channel's media the channel does
	// not select.
	others   []archive.RecordingDescriptor
	recorded map[int64]int64 // live recordings' recorded positions
	err      error
	// recordedErr is the first failure to read a live recording's recorded position: the
	// listing stands, but the status's lag of that recording is stale.
	recordedErr error
	atMs        int64
	took        time.Duration
}

type listAgain struct{ by *discovery }

func newDiscovery(env *Env, cfg *StreamConfig) actor.Producer {
	return func() actor.Actor { return &discovery{env: env, cfg: cfg} }
}

func (d *discovery) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		d.list(ctx)
	case *listAgain:
		if msg.by == d {
			d.list(ctx)
		}
	case *listResult:
		if msg.by != d {
			return // an earlier incarnation's, cancelled at its restart
		}
		if msg.err != nil {
			ctx.Send(ctx.Parent(), &messages.DiscoveryFailed{Error: msg.err.Error(), AtMs: msg.atMs})
		} else {
			ctx.Send(ctx.Parent(), listed(msg.descs, msg.recorded, msg.atMs))
		}
		if msg.err == nil {
			d.noteUnselected(ctx, msg)
		}
		if msg.recordedErr != nil {
			// The one thing that shows lag behind a live recording whose replay stopped
			// reading: its failure is said, not taken for a recording that stopped growing.
			if !d.recordedFailing {
				d.env.Logger.Warn("cannot read how far the archive recorded a live recording: the status's lag of the stream's live recordings is stale until it can", "stream", d.cfg.Def.Name, "error", msg.recordedErr)
			}
			ctx.Send(ctx.Parent(), &messages.FailureObserved{Failure: &messages.Failure{AtMs: msg.atMs, Kind: "archive", Message: "reading a live recording's recorded position (the status's lag of live recordings is stale): " + msg.recordedErr.Error()}})
		}
		d.recordedFailing = msg.recordedErr != nil
		self, system := ctx.Self(), ctx.ActorSystem()
		wait := d.cfg.DiscoveryInterval
		if msg.err == nil {
			paced := time.Duration(float64(msg.took) * (1/listingShare - 1))
			wait = max(wait, min(paced, listingPauseMax*d.cfg.DiscoveryInterval))
		}
		time.AfterFunc(wait, func() { system.Root.Send(self, &listAgain{by: d}) })
	case *actor.Stopping, *actor.Restarting:
		if d.cancel != nil {
			d.cancel()
		}
	}
}

func (d *discovery) list(ctx actor.Context) {
	base, cancel := context.WithCancel(context.Background()) // ended at the actor's stop
	d.cancel = cancel
	self, system := ctx.Self(), ctx.ActorSystem()
	if !d.env.tasks().Go(func() {
		defer cancel()
		began := time.Now()
		listCtx, cancelList := context.WithTimeout(base, d.cfg.CallTimeout)
		descs, others, err := d.env.Archive.ChannelRecordings(listCtx, d.cfg.Channel, d.cfg.Def.StreamID, discoveryPageSize)
		cancelList()
		recorded := map[int64]int64{}
		var recordedErr error
		for _, desc := range descs {
			if err != nil {
				break
			}
			if desc.IsLive() {
				// For status only: a failure here is not a failed listing. Each call has a
				// timeout of its own: the listing's may be spent (a catalog of many pages).
				call, cancelCall := context.WithTimeout(base, d.cfg.CallTimeout)
				pos, perr := d.env.Archive.MaxRecordedPosition(call, desc.RecordingID)
				cancelCall()
				if perr != nil {
					if recordedErr == nil { // the first is said; the others are read on
						recordedErr = fmt.Errorf("recording %d: %w", desc.RecordingID, perr)
					}
					continue
				}
				recorded[desc.RecordingID] = pos
			}
		}
		system.Root.Send(self, &listResult{by: d, descs: descs, others: others, recorded: recorded, err: err, recordedErr: recordedErr, atMs: d.env.nowMs(), took: time.Since(began)})
	}) {
		cancel()
	}
}

// noteUnselected warns, once a distinct set of channels, when the configured channel
// selects none of the archive's recordings of the stream id and its media while there are
// some: the stream would show caught-up for ever with nothing to replay. They may be
// another stream's (sharing the stream id on another endpoint), so the stream goes on; the
// warning is also its status's "channel" failure. More recordings on the same channels
// (that other stream going on) are not warned of again.
func (d *discovery) noteUnselected(ctx actor.Context, msg *listResult) {
	var chans []string
	if len(msg.descs) == 0 {
		chans = channelsOf(msg.others)
	}
	key := strings.Join(chans, "\n")
	if key == d.unselected {
		return
	}
	d.unselected = key
	if key == "" {
		return
	}
	note := unselectedNote(d.cfg.Channel, d.cfg.Def.StreamID, len(msg.others), chans)
	d.env.Logger.Warn(note, "stream", d.cfg.Def.Name)
	ctx.Send(ctx.Parent(), &messages.FailureObserved{Failure: &messages.Failure{AtMs: msg.atMs, Kind: "channel", Message: note}})
}

// channelsOf is the distinct channels recs were made on, sorted.
func channelsOf(recs []archive.RecordingDescriptor) []string {
	var chans []string
	for _, r := range recs {
		chans = append(chans, r.OriginalChannel)
	}
	slices.Sort(chans)
	return slices.Compact(chans)
}

// unselectedChannelsShown is how many of the unselected recordings' channels a note names.
const unselectedChannelsShown = 3

// unselectedNote says that uri selects none of the n recordings of streamID on its media,
// made on chans (distinct), naming a few of them.
func unselectedNote(uri channel.URI, streamID int32, n int, chans []string) string {
	shown := chans[:min(len(chans), unselectedChannelsShown)]
	more := ""
	if k := len(chans) - len(shown); k > 0 {
		more = fmt.Sprintf(" and %d more channel(s)", k)
	}
	return fmt.Sprintf("the configured channel %s selects none of the archive's %d recording(s) of stream id %d, made on %s%s: %s",
		uri, n, streamID, strings.Join(shown, ", "), more, UnselectedHint)
}

// UnselectedHint is what to do when a stream's configured channel selects none of the
// archive's recordings of its stream id and media: said by discovery, and by `ferry
// recordings`.
const UnselectedHint = "if they are this stream's, configure a channel they were made on (its endpoint spelt as theirs, localhost is not 127.0.0.1, " +
	"and no parameter they lack); if they are another stream's, this one has none yet"

func listed(descs []archive.RecordingDescriptor, recorded map[int64]int64, atMs int64) *messages.RecordingsListed {
	out := &messages.RecordingsListed{ListedAtMs: atMs, Recordings: make([]*messages.RecordingInfo, 0, len(descs))}
	for _, d := range descs {
		info := &messages.RecordingInfo{
			RecordingId:   d.RecordingID,
			StartPosition: d.StartPosition,
			StopPosition:  -1,
			StartMs:       d.StartTimestampMs,
			Live:          d.IsLive(),
			SessionId:     d.SessionID,
		}
		if !info.Live {
			info.StopPosition = d.StopPosition
			info.StopMs = d.StopTimestampMs
			info.RecordedPosition = d.StopPosition
		} else if pos, ok := recorded[d.RecordingID]; ok {
			info.RecordedPosition = pos
		} else {
			info.RecordedPosition = -1 // not observed
		}
		out.Recordings = append(out.Recordings, info)
	}
	return out
}
