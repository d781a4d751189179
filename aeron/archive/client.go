package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive/internal/codec"
	"github.com/ferry-bridge/ferry/aeron/channel"
)

// Defaults of [Options]: the archive's always-on IPC control channel and Aeron's defaults.
const (
	DefaultControlChannel   = "aeron:ipc?term-length=64k"
	DefaultControlStreamID  = 10
	DefaultResponseChannel  = "aeron:ipc?term-length=64k"
	DefaultResponseStreamID = 20
	DefaultMessageTimeout   = 10 * time.Second
	defaultSignalBuffer     = 1024
)

// Options configure an archive [Client]. Zero fields take the defaults above.
type Options struct {
	// ControlChannel and ControlStreamID are where the archive takes requests: its local
	// IPC channel by default, or its UDP control channel (aeron.archive.control.channel).
	ControlChannel  string
	ControlStreamID int32
	// ResponseChannel and ResponseStreamID are where the archive answers. A UDP response
	// channel needs an explicit endpoint port.
	ResponseChannel  string
	ResponseStreamID int32
	// MessageTimeout bounds the wait for each answer. An archive silent for longer with no
	// call waiting is asked for its id, and counts as unavailable if that goes unanswered
	// for as long: its pings, every second by default, may come less often.
	MessageTimeout time.Duration
	// Credentials answer an authentication challenge; without them a challenge fails the
	// connect with [ErrAuthenticationRequired].
	Credentials []byte
	// SignalBuffer is how many recording signals wait for the consumer of
	// [Client.Signals] before newer ones are dropped (and counted in the next). 1024.
	SignalBuffer int
	// OnError receives errors that belong to no waiting call, such as a replay failing
	// after the archive accepted it. It runs on the agent goroutine and must not block. A
	// call into the client made from it would wait for the agent running it: Close and the
	// requests return [ErrReentrant] there instead.
	// Default: log at warn level.
	OnError func(error)
	// Logger for the default OnError. Default slog.Default().
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.ControlChannel == "" {
		o.ControlChannel = DefaultControlChannel
	}
	if o.ControlStreamID == 0 {
		o.ControlStreamID = DefaultControlStreamID
	}
	if o.ResponseChannel == "" {
		o.ResponseChannel = DefaultResponseChannel
	}
	if o.ResponseStreamID == 0 {
		o.ResponseStreamID = DefaultResponseStreamID
	}
	if o.MessageTimeout <= 0 {
		o.MessageTimeout = DefaultMessageTimeout
	}
	if o.SignalBuffer <= 0 {
		o.SignalBuffer = defaultSignalBuffer
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OnError == nil {
		logger := o.Logger
		o.OnError = func(err error) { logger.Warn("aeron archive", "err", err) }
	}
	return o
}

// requestQueueLength bounds the requests waiting for the agent; a caller whose request
// does not fit waits, bounded by its context.
const requestQueueLength = 64

// Client is a control session with an Aeron archive. It is safe for concurrent use.
type Client struct {
	opts             Options
	aeron            *aeron.Client
	pub              *aeron.ExclusivePublication // requests; the agent is its only writer
	sub              *aeron.Subscription         // responses; the agent is its only poller
	controlSessionID int64
	archiveID        int64
	nextCorrelation  atomic.Int64
	responseLost     atomic.Bool // set when the archive's response image goes away

	requests chan *call
	signals  chan Signal
	stopping chan struct{} // closed by Close
	dead     chan struct{} // closed when the client stops serving calls
	done     chan struct{} // closed when the agent has exited
	stopOnce sync.Once
	// inOnError counts the OnError calls the agent is running (0 or 1), so that a call
	// checks its stack for re-entry only then (package reentry).
	inOnError atomic.Int32
	// err is why the client is dead; stored by the agent before it closes dead.
	err atomic.Pointer[error]
}

// Connect opens a control session with the archive reachable through a (connected Aeron
// client). It fails with an error wrapping [ErrArchiveUnavailable] if no archive answers
// within the message timeout (or ctx).
func Connect(ctx context.Context, a *aeron.Client, opts Options) (*Client, error) {
	opts = opts.withDefaults()
	// One random session id on both channels, as the Java client does: the archive
	// answers on an exclusive publication with that session id, so this client's
	// response subscription sees its own answers only.
	session := rand.Int32()
	control, err := withSessionID(opts.ControlChannel, session)
	if err != nil {
		return nil, fmt.Errorf("archive: control channel: %w", err)
	}
	response, err := withSessionID(opts.ResponseChannel, session)
	if err != nil {
		return nil, fmt.Errorf("archive: response channel: %w", err)
	}
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, opts.MessageTimeout)
	defer cancel()
	c := &Client{
		opts:     opts,
		aeron:    a,
		requests: make(chan *call, requestQueueLength),
		signals:  make(chan Signal, opts.SignalBuffer),
		stopping: make(chan struct{}),
		dead:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	c.nextCorrelation.Store(rand.Int64N(1 << 40))
	// The archive's response image going away means the archive (or its session) is gone;
	// the handler only sets a flag the agent checks (it runs on the Aeron conductor).
	lost := aeron.ImageHandlers{OnUnavailable: func(*aeron.Image) { c.responseLost.Store(true) }}
	if c.sub, err = a.AddSubscription(ctx, response, opts.ResponseStreamID, lost); err != nil {
		return nil, fmt.Errorf("archive: response subscription: %w", err)
	}
	if c.pub, err = a.AddExclusivePublication(ctx, control, opts.ControlStreamID); err != nil {
		return nil, errors.Join(fmt.Errorf("archive: control publication: %w", err), c.sub.Close())
	}
	if err := c.handshake(ctx, response); err != nil {
		return nil, errors.Join(err, c.pub.Close(), c.sub.Close())
	}
	go newAgent(c).run()
	// The first request after the connect OK activates the session (until then the
	// archive keeps repeating the OK); asking for the archive id is the Java client's.
	corr := c.correlationID()
	id, err := c.relevant(ctx, "archive id", corr, &codec.ArchiveIDRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && caller.Err() == nil {
			err = fmt.Errorf("%w: the archive opened the control session, then did not answer its first request (archive id) within %s: %w", ErrArchiveUnavailable, opts.MessageTimeout, err)
		}
		return nil, errors.Join(err, c.Close())
	}
	c.archiveID = id
	return c, nil
}

func withSessionID(ch string, session int32) (string, error) {
	u, err := channel.Parse(ch)
	if err != nil {
		return "", err
	}
	if u, err = u.WithSessionID(session); err != nil {
		return "", err
	}
	return u.String(), nil
}

// ControlSessionID is the archive's id for this session.
func (c *Client) ControlSessionID() int64 { return c.controlSessionID }

// ArchiveID is the archive's id (aeron.archive.id); it appears in the keys of its counters.
func (c *Client) ArchiveID() int64 { return c.archiveID }

// Signals delivers the recording signals of this session's recordings, in the order the
// archive sent them. See [Signal.Dropped] for what happens when the consumer falls behind.
func (c *Client) Signals() <-chan Signal { return c.signals }

// Dead is closed when the client stops serving calls: after Close, or when the archive
// became unavailable ([Client.Err] says which).
func (c *Client) Dead() <-chan struct{} { return c.dead }

// Err returns why the client stopped serving calls, or nil while it serves them.
func (c *Client) Err() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Close ends the control session and releases the client's publication and subscription.
// The archive does not stop the session's replays then (ControlSession.close, 1.47.3): a
// replay ends when it is stopped, reaches its end, or loses its subscriber, or, never
// subscribed to, after the archive's connect timeout. Close it before the Aeron client it was built
// on. It is idempotent. It waits for the agent that runs OnError, so from OnError it
// returns [ErrReentrant] and does nothing (close from another goroutine).
func (c *Client) Close() error {
	if c.reentrant() {
		return ErrReentrant
	}
	c.stopOnce.Do(func() { close(c.stopping) })
	<-c.done
	err := errors.Join(c.pub.Close(), c.sub.Close())
	if cause := c.Err(); cause != nil && !errors.Is(cause, ErrClosed) {
		return errors.Join(cause, err)
	}
	return err
}

func (c *Client) correlationID() int64 { return c.nextCorrelation.Add(1) }

// ListRecordingsForURI returns up to count descriptors of recordings of streamID whose
// original channel contains channelFragment (empty: any channel), starting at recording id
// fromRecordingID inclusive. Fewer than count means the catalog has no more.
func (c *Client) ListRecordingsForURI(ctx context.Context, fromRecordingID int64, count int32, channelFragment string, streamID int32) ([]RecordingDescriptor, error) {
	if count <= 0 {
		return nil, fmt.Errorf("archive: listing count %d must be positive", count)
	}
	corr := c.correlationID()
	res, err := c.do(ctx, &call{
		what:      fmt.Sprintf("list recordings for %q stream %d from %d", channelFragment, streamID, fromRecordingID),
		kind:      listing,
		corr:      corr,
		wantCount: int(count),
		request: &codec.ListRecordingsForURIRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr,
			FromRecordingID: fromRecordingID, RecordCount: count, StreamID: streamID, Channel: channelFragment},
	})
	return res.descriptors, err
}

// RecordingsForURI lists every recording of streamID whose original channel contains
// channelFragment, paging pageSize at a time. Recording ids may have gaps wider than a
// page (other streams' recordings, purges): the next page starts after the highest id
// returned, so none is skipped or listed twice.
func (c *Client) RecordingsForURI(ctx context.Context, channelFragment string, streamID int32, pageSize int32) ([]RecordingDescriptor, error) {
	if pageSize <= 0 {
		return nil, fmt.Errorf("archive: page size %d must be positive", pageSize)
	}
	var all []RecordingDescriptor
	for from := int64(0); ; {
		page, err := c.ListRecordingsForURI(ctx, from, pageSize, channelFragment, streamID)
		if err != nil {
			return all, err
		}
		all = append(all, page...)
		if len(page) < int(pageSize) {
			return all, nil
		}
		from = page[len(page)-1].RecordingID + 1
	}
}

// RecordingsOfChannel lists every recording of streamID whose original channel uri selects
// ([channel.URI.Selects]): uri, or uri with parameters added, in any order. The archive
// matches a channel fragment as a substring (RecordingsForURI), which would take
// endpoint=h:40123 for endpoint=h:4012 and miss a channel whose parameters are in another
// order; this lists the recordings of uri's media and keeps those uri selects.
// [Client.ChannelRecordings] also returns the others.
func (c *Client) RecordingsOfChannel(ctx context.Context, uri channel.URI, streamID int32, pageSize int32) ([]RecordingDescriptor, error) {
	selected, _, err := c.ChannelRecordings(ctx, uri, streamID, pageSize)
	return selected, err
}

// ChannelRecordings lists the recordings of streamID on uri's media, as RecordingsOfChannel
// does, and splits them: selected are those uri selects, others those it does not (made on
// another host spelling, another port, without one of uri's parameters: another stream's,
// or this one's under a channel misconfigured). Both are in id order; on an error both hold
// what was listed before it.
func (c *Client) ChannelRecordings(ctx context.Context, uri channel.URI, streamID int32, pageSize int32) (selected, others []RecordingDescriptor, err error) {
	all, err := c.RecordingsForURI(ctx, "aeron:"+uri.Media().String(), streamID, pageSize)
	selected, others = splitSelected(uri, all)
	return selected, others, err
}

// splitSelected splits descs into those whose original channel uri selects and the others,
// each in descs's order.
func splitSelected(uri channel.URI, descs []RecordingDescriptor) (selected, others []RecordingDescriptor) {
	for _, d := range descs {
		if uri.Selects(d.OriginalChannel) {
			selected = append(selected, d)
		} else {
			others = append(others, d)
		}
	}
	return selected, others
}

// Recording returns one recording's descriptor, or an error wrapping
// [ErrRecordingUnknown].
func (c *Client) Recording(ctx context.Context, recordingID int64) (RecordingDescriptor, error) {
	corr := c.correlationID()
	res, err := c.do(ctx, &call{
		what: fmt.Sprintf("describe recording %d", recordingID), kind: listing, wantCount: 1, corr: corr,
		request: &codec.ListRecordingRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr, RecordingID: recordingID},
	})
	if err != nil {
		return RecordingDescriptor{}, err
	}
	if len(res.descriptors) == 0 {
		return RecordingDescriptor{}, fmt.Errorf("%w: %d", ErrRecordingUnknown, recordingID)
	}
	return res.descriptors[0], nil
}

// RecordingPosition is how far a live recording has recorded, or [NullPosition] if it is
// not being recorded.
func (c *Client) RecordingPosition(ctx context.Context, recordingID int64) (int64, error) {
	corr := c.correlationID()
	return c.relevant(ctx, fmt.Sprintf("recording position of %d", recordingID), corr,
		&codec.RecordingPositionRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr, RecordingID: recordingID})
}

// StopPosition is where a recording stopped, or [NullPosition] while it is live.
func (c *Client) StopPosition(ctx context.Context, recordingID int64) (int64, error) {
	corr := c.correlationID()
	return c.relevant(ctx, fmt.Sprintf("stop position of %d", recordingID), corr,
		&codec.StopPositionRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr, RecordingID: recordingID})
}

// MaxRecordedPosition is the live recorded position of an active recording, else its stop
// position.
func (c *Client) MaxRecordedPosition(ctx context.Context, recordingID int64) (int64, error) {
	corr := c.correlationID()
	return c.relevant(ctx, fmt.Sprintf("max recorded position of %d", recordingID), corr,
		&codec.MaxRecordedPositionRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr, RecordingID: recordingID})
}

// StartRecording asks the archive to record channel and stream and returns the archive's
// recording subscription id. Recordings then start per publisher image, each announced by
// a START signal. With autoStop, the archive stops the recording subscription when the
// recording ends.
func (c *Client) StartRecording(ctx context.Context, ch string, streamID int32, source SourceLocation, autoStop bool) (int64, error) {
	corr := c.correlationID()
	return c.started(ctx, fmt.Sprintf("start recording %q stream %d", ch, streamID), corr,
		&codec.StartRecordingRequest2{ControlSessionID: c.controlSessionID, CorrelationID: corr,
			StreamID: streamID, SourceLocation: source, AutoStop: autoStop, Channel: ch}, c.StopRecordingSubscription, false)
}

// ExtendRecording asks the archive to append to the stopped recording recordingID what it
// records of channel and stream, and returns the archive's recording subscription id. The
// publication must continue the recording: created with the recording's stop position as its
// initial position (ch's init-term-id, term-id and term-offset, with the recording's term
// length and MTU); the archive rejects an image that joins anywhere else, which reaches
// OnError. An EXTEND signal announces the extension; with autoStop, the archive stops the
// recording subscription when the image ends.
func (c *Client) ExtendRecording(ctx context.Context, recordingID int64, ch string, streamID int32, source SourceLocation, autoStop bool) (int64, error) {
	corr := c.correlationID()
	return c.started(ctx, fmt.Sprintf("extend recording %d with %q stream %d", recordingID, ch, streamID), corr,
		&codec.ExtendRecordingRequest2{ControlSessionID: c.controlSessionID, CorrelationID: corr, RecordingID: recordingID,
			StreamID: streamID, SourceLocation: source, AutoStop: autoStop, Channel: ch}, c.StopRecordingSubscription, false)
}

// StopRecording stops recording channel and stream (the same channel StartRecording got).
func (c *Client) StopRecording(ctx context.Context, ch string, streamID int32) error {
	corr := c.correlationID()
	_, err := c.relevant(ctx, fmt.Sprintf("stop recording %q stream %d", ch, streamID), corr,
		&codec.StopRecordingRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr, StreamID: streamID, Channel: ch})
	return err
}

// StopRecordingSubscription stops the recording subscription StartRecording returned.
func (c *Client) StopRecordingSubscription(ctx context.Context, subscriptionID int64) error {
	corr := c.correlationID()
	_, err := c.relevant(ctx, fmt.Sprintf("stop recording subscription %d", subscriptionID), corr,
		&codec.StopRecordingSubscriptionRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr, SubscriptionID: subscriptionID})
	return err
}

// StartReplay replays a recording from position (a frame-aligned position within the
// recording, or NullPosition for its start) for length bytes ([ReplayToEnd]: all of it,
// following a live recording until it stops) to replayChannel and replayStreamID, and
// returns the replay session id; the replay's image has session id
// [ReplayImageSessionID] of it. The archive may still fail the replay after accepting it
// (no subscriber connected within its connect timeout): that error goes to OnError.
func (c *Client) StartReplay(ctx context.Context, recordingID, position, length int64, replayChannel string, replayStreamID int32) (int64, error) {
	corr := c.correlationID()
	return c.started(ctx, fmt.Sprintf("replay recording %d from %d", recordingID, position), corr,
		&codec.ReplayRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr,
			RecordingID: recordingID, Position: position, Length: length, ReplayStreamID: replayStreamID,
			FileIOMaxLength: codec.NullValue, ReplayToken: codec.NullValue, ReplayChannel: replayChannel}, c.StopReplay, true)
}

// StopReplay stops a replay (the archive answers OK even for an unknown id).
func (c *Client) StopReplay(ctx context.Context, replaySessionID int64) error {
	corr := c.correlationID()
	_, err := c.relevant(ctx, fmt.Sprintf("stop replay %d", replaySessionID), corr,
		&codec.StopReplayRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr, ReplaySessionID: replaySessionID})
	return err
}

// TruncateRecording cuts a stopped recording back to position.
func (c *Client) TruncateRecording(ctx context.Context, recordingID, position int64) error {
	corr := c.correlationID()
	_, err := c.relevant(ctx, fmt.Sprintf("truncate recording %d at %d", recordingID, position), corr,
		&codec.TruncateRecordingRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr, RecordingID: recordingID, Position: position})
	return err
}

// PurgeRecording deletes a stopped recording and its files from the archive.
func (c *Client) PurgeRecording(ctx context.Context, recordingID int64) error {
	corr := c.correlationID()
	_, err := c.relevant(ctx, fmt.Sprintf("purge recording %d", recordingID), corr,
		&codec.PurgeRecordingRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr, RecordingID: recordingID})
	return err
}

// PurgeSegments deletes the segment files of a recording below newStartPosition, which
// becomes its start position (retention). newStartPosition must be a segment boundary, at
// or after the recording's start, below the segment being recorded. It returns how many
// segment files were deleted.
func (c *Client) PurgeSegments(ctx context.Context, recordingID, newStartPosition int64) (int64, error) {
	corr := c.correlationID()
	return c.relevant(ctx, fmt.Sprintf("purge the segments of recording %d below %d", recordingID, newStartPosition), corr,
		&codec.PurgeSegmentsRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr, RecordingID: recordingID, NewStartPosition: newStartPosition})
}

// DetachSegments detaches the segments of a recording below newStartPosition, which
// becomes its start position, leaving their files on disk for [Client.AttachSegments] to
// restore. newStartPosition must be a segment boundary, at or after the recording's start,
// below the segment being recorded.
func (c *Client) DetachSegments(ctx context.Context, recordingID, newStartPosition int64) error {
	corr := c.correlationID()
	_, err := c.relevant(ctx, fmt.Sprintf("detach the segments of recording %d below %d", recordingID, newStartPosition), corr,
		&codec.DetachSegmentsRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr, RecordingID: recordingID, NewStartPosition: newStartPosition})
	return err
}

// AttachSegments attaches the segment files on disk just below a recording's start (ones
// [Client.DetachSegments] detached) back to it, moving its start position down. It returns
// how many segments were attached.
func (c *Client) AttachSegments(ctx context.Context, recordingID int64) (int64, error) {
	corr := c.correlationID()
	return c.relevant(ctx, fmt.Sprintf("attach the detached segments of recording %d", recordingID), corr,
		&codec.AttachSegmentsRequest{ControlSessionID: c.controlSessionID, CorrelationID: corr, RecordingID: recordingID})
}

// relevant sends a request answered by one ControlResponse and returns its relevant id.
func (c *Client) relevant(ctx context.Context, what string, corr int64, req codec.Request) (int64, error) {
	res, err := c.do(ctx, &call{what: what, kind: single, corr: corr, request: req})
	return res.relevantID, err
}

// started is relevant for a request that starts something in the archive: if ctx ends
// after the request went out and the archive then starts it anyway, stop (with the relevant
// id) stops it, so that no replay or recording is left running that nobody knows of.
//
// quietWhenClosed: what stop would stop ends by itself once the client is closed (a replay
// nobody subscribes to ends after the archive's connect timeout), so failing to stop it
// then is not worth a warning.
func (c *Client) started(ctx context.Context, what string, corr int64, req codec.Request, stop func(context.Context, int64) error, quietWhenClosed bool) (int64, error) {
	res, err := c.do(ctx, &call{what: what, kind: single, corr: corr, request: req, undo: func(id int64) {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.MessageTimeout)
		defer cancel()
		if err := stop(ctx, id); err != nil && !(quietWhenClosed && errors.Is(err, ErrClosed)) {
			c.opts.Logger.Warn("archive: could not stop what a request abandoned by its caller started", "request", what, "relevant_id", id, "error", err)
		}
	}})
	return res.relevantID, err
}

// do hands a call to the agent and waits for its result, the client's death, or ctx.
func (c *Client) do(ctx context.Context, cl *call) (result, error) {
	if c.reentrant() {
		return result{}, ErrReentrant
	}
	cl.reply = make(chan result, 1)
	select {
	case c.requests <- cl:
	case <-c.dead:
		return result{}, c.Err()
	case <-ctx.Done():
		return result{}, ctx.Err()
	}
	select {
	case r := <-cl.reply:
		return r, r.err
	case <-c.dead:
		// The answer may have come just before the end: prefer it.
		select {
		case r := <-cl.reply:
			return r, r.err
		default:
			return result{}, c.Err()
		}
	case <-ctx.Done():
		cl.abandoned.Store(true) // not sent yet: it will not be
		if cl.undo != nil {
			// Sent already, its answer is still to come and may start something.
			go func() {
				select {
				case r := <-cl.reply:
					if r.err == nil {
						cl.undo(r.relevantID)
					}
				case <-c.dead:
				}
			}()
		}
		return result{}, ctx.Err()
	}
}
