package aeron

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron/internal/broadcast"
	"github.com/ferry-bridge/ferry/aeron/internal/cnc"
	"github.com/ferry-bridge/ferry/aeron/internal/command"
	"github.com/ferry-bridge/ferry/aeron/internal/counters"
	"github.com/ferry-bridge/ferry/aeron/internal/logbuffer"
	"github.com/ferry-bridge/ferry/aeron/internal/ringbuffer"
	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// fakeDriver is a media driver in plain memory, driven step by step by a test: it builds a
// CnC file, reads the client's commands from the to-driver ring and broadcasts what the
// test tells it to. It exists to reach states the real driver produces rarely or never on
// demand (another client's timeout, a lapped broadcast buffer, a duplicate image event);
// everything else is tested against the real Java driver in test/driver.
type fakeDriver struct {
	t    testing.TB
	file *cnc.File
	ring *ringbuffer.ManyToOne
	tx   *broadcast.Transmitter
	meta shm.Buffer // counters metadata

	mu       sync.Mutex
	commands []driverCommand
	taken    int // commands before this index were returned by awaitCommand
}

type driverCommand struct {
	typ           command.CommandType
	clientID      int64
	correlationID int64
	// registrationID is a REMOVE_PUBLICATION's or REMOVE_SUBSCRIPTION's; 0 for others.
	registrationID int64
}

// Section sizes of the fake CnC file: small, so that a test can lap the broadcast buffer.
const (
	fakeRingCapacity      = 64 << 10
	fakeBroadcastCapacity = 4 << 10
	fakeCounters          = 16
	fakeErrorLogLength    = 1 << 10
)

func newFakeDriver(t testing.TB) *fakeDriver {
	t.Helper()
	lengths := []int{
		fakeRingCapacity + ringbuffer.TrailerLength,
		fakeBroadcastCapacity + broadcast.TrailerLength,
		fakeCounters * counters.MetadataLength,
		fakeCounters * counters.ValueLength,
		fakeErrorLogLength,
	}
	total := cnc.EndOfMetadataOffset
	for _, n := range lengths {
		total += n
	}
	b := shm.Alloc(total)
	for i, off := range []int{cnc.ToDriverBufferLengthOffset, cnc.ToClientsBufferLengthOffset,
		cnc.CountersMetadataBufferLengthOffset, cnc.CountersValuesBufferLengthOffset, cnc.ErrorLogBufferLengthOffset} {
		b.PutInt32(off, int32(lengths[i]))
	}
	b.PutInt64(cnc.ClientLivenessTimeoutOffset, int64(10*time.Second))
	b.PutInt64(cnc.StartTimestampOffset, time.Now().UnixMilli())
	b.PutInt64(cnc.PIDOffset, 4242)
	b.StoreInt32(cnc.VersionOffset, int32(cnc.CNCVersion)) // last, as a driver does
	file, err := cnc.Wrap(b)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := broadcast.NewTransmitter(file.Section(cnc.ToClients))
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDriver{t: t, file: file, ring: file.ToDriver(), tx: tx, meta: file.Section(cnc.CountersMetadata)}
	d.beat(time.Now())
	return d
}

// beat writes the driver heartbeat (the consumer heartbeat of the to-driver ring).
func (d *fakeDriver) beat(now time.Time) { d.ring.SetConsumerHeartbeatTime(now.UnixMilli()) }

// keepBeating keeps the driver's heartbeat fresh, every 20 ms, until the test ends.
func (d *fakeDriver) keepBeating() {
	stop := make(chan struct{})
	d.t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-stop:
				return
			case now := <-time.After(20 * time.Millisecond):
				d.beat(now)
			}
		}
	}()
}

// client connects a client to the fake driver, with a quick duty cycle unless opts say
// otherwise; the client is closed when the test ends.
func (d *fakeDriver) client(opts Options) *Client {
	d.t.Helper()
	if opts.IdleInterval == 0 {
		opts.IdleInterval = time.Millisecond
	}
	if opts.OnError == nil {
		opts.OnError = func(error) {}
	}
	c, err := newClient(opts.withDefaults(), d.file)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { _ = c.Close() })
	return c
}

// read consumes the commands the client wrote so far.
func (d *fakeDriver) read() []driverCommand {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, err := d.ring.Read(1<<20, func(typeID int32, payload []byte) {
		c := driverCommand{
			typ:           command.CommandType(typeID),
			clientID:      int64(binary.LittleEndian.Uint64(payload[0:])),
			correlationID: int64(binary.LittleEndian.Uint64(payload[8:])),
		}
		if c.typ == command.CommandRemovePublication || c.typ == command.CommandRemoveSubscription {
			c.registrationID = int64(binary.LittleEndian.Uint64(payload[16:]))
		}
		d.commands = append(d.commands, c)
	})
	if err != nil {
		d.t.Fatal(err)
	}
	return append([]driverCommand(nil), d.commands...)
}

// awaitCommand waits for the client's next command of typ (after the ones it returned
// before) and returns it.
func (d *fakeDriver) awaitCommand(typ command.CommandType) driverCommand {
	d.t.Helper()
	var found driverCommand
	waitFor(d.t, func() bool {
		cmds := d.read()
		d.mu.Lock()
		defer d.mu.Unlock()
		for i := d.taken; i < len(cmds); i++ {
			if cmds[i].typ == typ {
				d.taken, found = i+1, cmds[i]
				return true
			}
		}
		return false
	})
	return found
}

// barrier returns once the client's conductor has handled everything broadcast before it:
// it asks the client for a subscription and answers, and the client reads broadcasts in
// order. It returns the client's error (nil while it lives).
func (d *fakeDriver) barrier(c *Client) error {
	d.t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := c.AddSubscription(context.Background(), "aeron:ipc", 999, ImageHandlers{})
		done <- err
	}()
	select {
	case err := <-done: // the client died before it could ask
		return err
	case <-time.After(20 * time.Millisecond):
	}
	if err := c.Err(); err != nil {
		return err
	}
	cmd := d.awaitCommand(command.CommandAddSubscription)
	d.send(command.ResponseOnSubscriptionReady, command.SubscriptionReady{CorrelationID: cmd.correlationID, ChannelStatusCounterID: -1}.AppendTo(nil))
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		d.t.Fatal("the barrier's subscription was not answered within 5 s")
		return nil
	}
}

// send broadcasts a response to every client.
func (d *fakeDriver) send(typ command.ResponseType, payload []byte) {
	d.t.Helper()
	if err := d.tx.Transmit(int32(typ), payload); err != nil {
		d.t.Fatal(err)
	}
}

// allocateCounter makes counter id allocated with a type and key, as the driver would.
func (d *fakeDriver) allocateCounter(id counters.CounterID, typ counters.TypeID, key []byte) {
	rec := d.meta.Sub(int(id)*counters.MetadataLength, counters.MetadataLength)
	rec.PutInt32(counters.TypeIDOffset, int32(typ))
	copy(rec.Bytes()[counters.KeyOffset:], key)
	rec.PutInt64(counters.FreeForReuseDeadlineOffset, counters.NotFreeToReuse)
	rec.StoreInt32(counters.StateOffset, int32(counters.StateAllocated))
}

// freeCounter reclaims counter id, as the driver does when its owner goes.
func (d *fakeDriver) freeCounter(id counters.CounterID) {
	d.meta.StoreInt32(int(id)*counters.MetadataLength+counters.StateOffset, int32(counters.StateReclaimed))
}

// newFakeLog creates a log buffer file initialised as the driver would (64 KiB terms) and
// returns its path.
func newFakeLog(t testing.TB) string {
	t.Helper()
	params := logbuffer.LogParams{TermLength: logbuffer.MinTermLength, PageSize: logbuffer.MinPageSize, MTU: 1408,
		InitialTermID: 1, SessionID: 5, StreamID: 7, RegistrationID: 99}
	path := filepath.Join(t.TempDir(), "99.logbuffer")
	if err := os.WriteFile(path, make([]byte, logbuffer.LogLength(params.TermLength, params.PageSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := shm.Map(path, shm.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := logbuffer.InitMetadata(m.Buffer(), params); err != nil {
		t.Fatal(err)
	}
	return path
}

// setCounterValue stores a counter's value, as the driver would.
func (d *fakeDriver) setCounterValue(id counters.CounterID, v int64) {
	d.file.Section(cnc.CountersValues).StoreInt64(int(id)*counters.ValueLength+counters.ValueOffset, v)
}

// subscribe adds a subscription on channel, which the driver answers with channel status
// counter statusID.
func (d *fakeDriver) subscribe(c *Client, channel string, statusID int32) *Subscription {
	d.t.Helper()
	type added struct {
		sub *Subscription
		err error
	}
	done := make(chan added, 1)
	go func() {
		s, err := c.AddSubscription(context.Background(), channel, 7, ImageHandlers{})
		done <- added{s, err}
	}()
	cmd := d.awaitCommand(command.CommandAddSubscription)
	d.send(command.ResponseOnSubscriptionReady, command.SubscriptionReady{CorrelationID: cmd.correlationID, ChannelStatusCounterID: statusID}.AppendTo(nil))
	a := <-done
	if a.err != nil {
		d.t.Fatal(a.err)
	}
	return a.sub
}
