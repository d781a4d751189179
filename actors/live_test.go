package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/test/eventually"
)

// endpointSubscription is a live subscription with no image whose channel endpoint fails
// when the test says, as an *aeron.Subscription's does when the driver reports it.
type endpointSubscription struct {
	failed     atomic.Pointer[error]
	closed     atomic.Bool
	closeTakes time.Duration
}

func (s *endpointSubscription) Images() []*aeron.Image { return nil }
func (s *endpointSubscription) IsClosed() bool         { return s.closed.Load() }
func (s *endpointSubscription) Close() error {
	time.Sleep(s.closeTakes) // a command to the media driver, and its answer
	s.closed.Store(true)
	return nil
}
func (s *endpointSubscription) fail(err error) { s.failed.Store(&err) }
func (s *endpointSubscription) Err() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// endpointSubscriptions makes the live reader's subscriptions and keeps them, in order.
type endpointSubscriptions struct {
	mu   sync.Mutex
	subs []*endpointSubscription
	// failFirst: the first subscription comes with its endpoint failed already; failAll:
	// every one.
	failFirst, failAll error
	closeTakes         time.Duration
	// whileOpen counts the subscriptions added while an earlier one was still open.
	whileOpen int
}

func (e *endpointSubscriptions) add(context.Context, string, int32) (liveSubscription, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := &endpointSubscription{closeTakes: e.closeTakes}
	if len(e.subs) == 0 && e.failFirst != nil {
		s.fail(e.failFirst)
	}
	if e.failAll != nil {
		s.fail(e.failAll)
	}
	for _, earlier := range e.subs {
		if !earlier.IsClosed() {
			e.whileOpen++
			break
		}
	}
	e.subs = append(e.subs, s)
	return s, nil
}

func (e *endpointSubscriptions) made() []*endpointSubscription {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*endpointSubscription(nil), e.subs...)
}

// A live reader whose subscription the client closed under it (the media driver gone, the
// connection lost) reports it as a read failure, which the status keeps past the restart
// that subscribes again: until then the failure reached only the log.
func TestALiveReaderWhoseSubscriptionClosedSaysSo(t *testing.T) {
	env, cfg := testEnv(t)
	cfg.Transport = true
	system := testSystem(t)
	nb, pids := spawnNeighbours(system)
	subs := &endpointSubscriptions{}
	sends := &liveSends{epoch: 1, marks: newSentMarks()}
	spawnSupervised(t, system, env, cfg, func() actor.Actor {
		return &live{env: env, cfg: cfg, pids: pids, liveSends: sends, lastEnd: map[publication]int64{}, addSub: subs.add}
	})
	next[*messages.RecordingProgress](t, nb.stream) // subscribed
	subs.made()[0].closed.Store(true)
	if f := next[*messages.FailureObserved](t, nb.stream).Failure; f.Kind != "read" || !strings.Contains(f.Message, "the live subscription was closed") {
		t.Fatalf("failure %s %q; want a read failure saying the subscription was closed", f.Kind, f.Message)
	}
}

// A live reader whose subscription's channel endpoint fails (the driver could not bind its
// UDP socket, and said so after it made the subscription) receives nothing: it must not show
// live and healthy. It reports the driver's error as a read failure, is no longer
// subscribed in the status, closes that subscription and subscribes again after the
// back-off. Whether the error comes while it polls or before it took the subscription.
func TestALiveReaderWhoseChannelEndpointFailedIsNotLive(t *testing.T) {
	const driverSays = "java.net.BindException: Address already in use"
	for _, early := range []bool{false, true} {
		name := "while polling"
		if early {
			name = "before the first poll"
		}
		t.Run(name, func(t *testing.T) {
			env, cfg := testEnv(t)
			cfg.Transport = true
			system := testSystem(t)
			nb, pids := spawnNeighbours(system)
			subs := &endpointSubscriptions{}
			if early {
				subs.failFirst = errors.New(driverSays)
			}
			sends := &liveSends{epoch: 1, marks: newSentMarks()}
			spawnSupervised(t, system, env, cfg, func() actor.Actor {
				return &live{env: env, cfg: cfg, pids: pids, liveSends: sends, lastEnd: map[publication]int64{}, addSub: subs.add}
			})
			status := newStreamStatus(0)
			apply := func(m any) {
				switch m := m.(type) {
				case *messages.RecordingProgress:
					status.progress(m, at(1))
				case *messages.FailureObserved:
					status.failure(m.Failure)
				}
			}
			if !early {
				if p := next[*messages.RecordingProgress](t, nb.stream); p.Status.Publishers == nil {
					t.Fatal("the reader's first push does not say it is subscribed")
				}
				subs.made()[0].fail(errors.New(driverSays))
			}
			// Up to the failure, nothing says subscribed (early) ...
			var failure *messages.FailureObserved
			for failure == nil {
				select {
				case m := <-nb.stream:
					apply(m)
					if p, ok := m.(*messages.RecordingProgress); ok && early && p.Status.Publishers != nil {
						t.Fatal("the reader said it was subscribed on a failed endpoint")
					}
					failure, _ = m.(*messages.FailureObserved)
				case <-time.After(waitFor):
					t.Fatal("no failure observed: the reader goes on polling a subscription that receives nothing")
				}
			}
			if f := failure.Failure; f.Kind != "read" || !strings.Contains(f.Message, driverSays) {
				t.Fatalf("failure %s %q; want a read failure with the driver's message", f.Kind, f.Message)
			}
			// ... and after it, the push as it stops says it is not subscribed.
			for {
				p := next[*messages.RecordingProgress](t, nb.stream)
				apply(p)
				if p.Status.Publishers == nil {
					break
				}
			}
			st := status.build("s", "transport", nil, nil, time.Minute, 2)
			if st.State == "live" || len(st.Failures) == 0 || !strings.Contains(st.Failures[0].Message, driverSays) {
				t.Fatalf("status %s, failures %v; want not live, with the driver's error", st.State, st.Failures)
			}
			eventually.NoError(t, waitFor, func() error {
				if s := subs.made(); len(s) < 2 || !s[0].IsClosed() {
					return errors.New("the failed subscription was not closed and replaced by a new one")
				}
				return nil
			})
		})
	}
}

// A live reader whose channel endpoint failed subscribes again only once the failed
// subscription is closed: the media driver makes a new subscription on the endpoint an open
// one to the same channel holds, failed as it is, so a reader that subscribed again first
// failed again on it, restart after restart, until the supervisor gave the stream up.
func TestALiveReaderSubscribesAgainOnlyOnceItsFailedSubscriptionIsClosed(t *testing.T) {
	env, cfg := testEnv(t)
	cfg.Transport = true
	system := testSystem(t)
	_, pids := spawnNeighbours(system)
	subs := &endpointSubscriptions{failAll: errors.New("java.net.BindException: Address already in use"), closeTakes: 5 * time.Millisecond}
	sends := &liveSends{epoch: 1, marks: newSentMarks()}
	spawnSupervised(t, system, env, cfg, func() actor.Actor {
		return &live{env: env, cfg: cfg, pids: pids, liveSends: sends, lastEnd: map[publication]int64{}, addSub: subs.add}
	})
	eventually.NoError(t, waitFor, func() error {
		if n := len(subs.made()); n < 4 {
			return fmt.Errorf("%d subscriptions made; want the reader to have subscribed again 3 times", n)
		}
		return nil
	})
	subs.mu.Lock()
	defer subs.mu.Unlock()
	if subs.whileOpen > 0 {
		t.Fatalf("%d of %d subscriptions were added while an earlier, failed one was still open", subs.whileOpen, len(subs.subs))
	}
}

// A live subscription added while the reader stops (its stream fails, ferry reconnects or
// shuts down) is closed, whoever lets go second: the reader, if the subscription was handed
// over before it stopped, or the goroutine that added it, if the reader had stopped. Left
// open, nobody polls it, and an IPC or spy subscription holds the application's publisher
// back.
func TestALiveSubscriptionAddedWhileTheReaderStopsIsClosed(t *testing.T) {
	t.Run("made after the reader stopped", func(t *testing.T) {
		env, cfg := testEnv(t)
		cfg.Transport = true
		system := testSystem(t)
		_, pids := spawnNeighbours(system)
		entered, release := make(chan struct{}), make(chan struct{})
		sub := &endpointSubscription{}
		add := func(context.Context, string, int32) (liveSubscription, error) {
			close(entered)
			<-release
			return sub, nil // made although the reader stopped: the call did not see the cancel
		}
		reader := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &live{env: env, cfg: cfg, pids: pids, liveSends: &liveSends{epoch: 1, marks: newSentMarks()}, lastEnd: map[publication]int64{}, addSub: add}
		}))
		<-entered
		if err := system.Root.StopFuture(reader).Wait(); err != nil {
			t.Fatal(err)
		}
		close(release)
		eventually.NoError(t, waitFor, func() error {
			if !sub.IsClosed() {
				return errors.New("the subscription made after the reader stopped is open")
			}
			return nil
		})
	})
	t.Run("stopped at any point", func(t *testing.T) {
		env, cfg := testEnv(t)
		cfg.Transport = true
		system := testSystem(t)
		_, pids := spawnNeighbours(system)
		subs := &endpointSubscriptions{}
		for range 200 {
			reader := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
				return &live{env: env, cfg: cfg, pids: pids, liveSends: &liveSends{epoch: 1, marks: newSentMarks()}, lastEnd: map[publication]int64{}, addSub: subs.add}
			}))
			if err := system.Root.StopFuture(reader).Wait(); err != nil {
				t.Fatal(err)
			}
		}
		env.bg.Close() // every subscribing goroutine, and every close, is done
		made, open := subs.made(), 0
		for _, s := range made {
			if !s.IsClosed() {
				open++
			}
		}
		if len(made) == 0 || open > 0 {
			t.Fatalf("%d of the %d subscriptions made for readers that stopped are open", open, len(made))
		}
	})
}
