package aeron

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron/internal/logbuffer"
)

// A handler that panics in the middle of a poll (the caller recovers, as an actor's
// mailbox does): the fragments it returned from are consumed and never delivered again;
// the one it panicked on is delivered again by the next poll, not skipped.
func TestAPanickingHandlerConsumesWhatItReturnedFromOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		poll func(img *Image, handle func(string)) error
	}{
		{"Poll", func(img *Image, handle func(string)) error {
			_, err := img.Poll(func(p []byte, _ Header) { handle(string(p)) }, 10)
			return err
		}},
		{"BoundedPoll", func(img *Image, handle func(string)) error {
			_, err := img.BoundedPoll(func(p []byte, _ Header) { handle(string(p)) }, 1<<40, 10)
			return err
		}},
		{"ControlledPoll", func(img *Image, handle func(string)) error {
			_, err := img.ControlledPoll(func(p []byte, _ Header) Action { handle(string(p)); return Continue }, 10)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newFakeDriver(t)
			c := d.client(Options{})
			img := subscribeWithAnImage(t, d, c, ImageHandlers{}).Images()[0]
			offer(t, img.logPath, "msg-0", "msg-1", "msg-2", "msg-3")
			var seen []string
			func() {
				defer func() {
					if r := recover(); r != "handler bug" {
						t.Errorf("recovered %v; want the handler's panic", r)
					}
				}()
				_ = tc.poll(img, func(m string) {
					seen = append(seen, m)
					if m == "msg-2" {
						panic("handler bug")
					}
				})
			}()
			if err := tc.poll(img, func(m string) { seen = append(seen, m) }); err != nil {
				t.Fatal(err)
			}
			if want := []string{"msg-0", "msg-1", "msg-2", "msg-2", "msg-3"}; !slices.Equal(seen, want) {
				t.Fatalf("delivered %v; want %v", seen, want)
			}
		})
	}
}

// pollChildEnv makes the test binary, run again by
// TestAPollStopsBeforeTheNextFrameOnceItsImageCloses, play one of its scenarios instead of
// running it: a poll that read on after its log was unmapped dies of a fault no recover
// catches, and must take that process down, not the test runner.
const pollChildEnv = "FERRY_TEST_POLL_CHILD"

// A handler that closes its image's subscription and outlasts the resource linger, or
// closes the client (which unmaps at once), returns into a poll whose log is gone: the poll
// must stop there, before the next frame, as Java's Image polls do (they check isClosed
// before each frame), and not read unmapped memory. Each scenario runs in a child process,
// which a fault kills.
func TestAPollStopsBeforeTheNextFrameOnceItsImageCloses(t *testing.T) {
	polls := []struct {
		name string
		poll func(img *Image, handle func()) (int, error)
	}{
		{"Poll", func(img *Image, handle func()) (int, error) {
			return img.Poll(func([]byte, Header) { handle() }, 10)
		}},
		{"BoundedPoll", func(img *Image, handle func()) (int, error) {
			return img.BoundedPoll(func([]byte, Header) { handle() }, 1<<40, 10)
		}},
		{"ControlledPoll", func(img *Image, handle func()) (int, error) {
			return img.ControlledPoll(func([]byte, Header) Action { handle(); return Continue }, 10)
		}},
	}
	closings := []struct {
		name  string
		close func(*Client, *Subscription)
	}{
		{"SubscriptionClose", func(_ *Client, sub *Subscription) { _ = sub.Close() }}, // unmapped after the 20 ms linger
		{"ClientClose", func(c *Client, _ *Subscription) { _ = c.Close() }},           // unmapped at once
	}
	for _, p := range polls {
		for _, cl := range closings {
			scenario := p.name + "/" + cl.name
			t.Run(scenario, func(t *testing.T) {
				if os.Getenv(pollChildEnv) != scenario {
					inAChildProcess(t, scenario)
					return
				}
				d := newFakeDriver(t)
				c := d.client(Options{ResourceLinger: 20 * time.Millisecond})
				sub := subscribeWithAnImage(t, d, c, ImageHandlers{})
				img := sub.Images()[0]
				offer(t, img.logPath, "msg-0", "msg-1", "msg-2")
				handled := 0
				n, err := p.poll(img, func() {
					if handled++; handled == 1 {
						cl.close(c, sub)
						waitFor(t, func() bool { return !isMapped(t, img.logPath) })
					}
				})
				if n != 1 || handled != 1 || err != nil {
					t.Fatalf("poll = %d, %v after %d handler calls; want 1 fragment, then a stop at the closed image", n, err, handled)
				}
				if got, err := p.poll(img, func() { handled++ }); got != 0 || err != nil {
					t.Fatalf("poll of the closed image = %d, %v; want 0, nil", got, err)
				}
			})
		}
	}
}

// inAChildProcess runs the test binary again, on the running subtest only (named scenario
// within its test), with pollChildEnv set to scenario, and fails unless the child ran it
// and it passed.
func inAChildProcess(t *testing.T, scenario string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := "^" + strings.ReplaceAll(t.Name(), "/", "$/^") + "$"
	cmd := exec.Command(self, "-test.run="+run, "-test.count=1", "-test.v")
	// The child's temporary directories go in the parent's, removed even when a fault
	// kills the child before its own cleanup.
	cmd.Env = append(os.Environ(), pollChildEnv+"="+scenario, "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name()+" ")) {
		if len(out) > 1500 {
			out = out[:1500] // a fault's report begins with its cause; the goroutine dumps follow
		}
		t.Fatalf("the child process ended %v:\n%s", err, out)
	}
}

// offer appends msgs to the log at path through a mapping of its own, unmapped before it
// returns, so that the image's is the only mapping of the log left.
func offer(t *testing.T, path string, msgs ...string) {
	t.Helper()
	withAppender(t, path, func(app *logbuffer.ExclusiveAppender) {
		for _, m := range msgs {
			if _, err := app.Offer(logbuffer.Flow{Limit: 1 << 40, Connected: true}, []byte(m)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// withAppender calls fn with an appender to the log at path, through a mapping of its own,
// unmapped when fn returns.
func withAppender(t *testing.T, path string, fn func(*logbuffer.ExclusiveAppender)) {
	t.Helper()
	log, err := logbuffer.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	app, err := logbuffer.NewExclusiveAppender(log)
	if err != nil {
		t.Fatal(err)
	}
	fn(app)
}

// Image polls allocate nothing per poll or per fragment: the closed flag they load before
// every frame, the handler wrappers and the panic guard all stay on the stack.
func TestImagePollsAllocateNothing(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{})
	img := subscribeWithAnImage(t, d, c, ImageHandlers{}).Images()[0]
	msgs := make([]string, 3*101)
	for i := range msgs {
		msgs[i] = "msg"
	}
	offer(t, img.logPath, msgs...)
	h := func([]byte, Header) {}
	ch := func([]byte, Header) Action { return Continue }
	for name, poll := range map[string]func(){
		"Poll":           func() { _, _ = img.Poll(h, 1) },
		"BoundedPoll":    func() { _, _ = img.BoundedPoll(h, 1<<40, 1) },
		"ControlledPoll": func() { _, _ = img.ControlledPoll(ch, 1) },
	} {
		if n := testing.AllocsPerRun(100, poll); n != 0 {
			t.Errorf("%s: %v allocations per poll of one fragment; want 0", name, n)
		}
	}
	if img.Position() != 3*101*64 {
		t.Fatalf("position %d after the polls; want %d: a poll delivered nothing", img.Position(), 3*101*64)
	}
}

// A handler that panics on a reassembled message gets the same message again from the next
// poll, which delivers the fragment it panicked on again (see Image.Poll): the assembler
// must not append that last fragment a second time, nor count the message discarded.
func TestAPanickingHandlerGetsTheSameReassembledMessageAgain(t *testing.T) {
	for _, kind := range []string{"FragmentAssembler", "ControlledFragmentAssembler"} {
		t.Run(kind, func(t *testing.T) {
			d := newFakeDriver(t)
			c := d.client(Options{})
			img := subscribeWithAnImage(t, d, c, ImageHandlers{}).Images()[0]
			var msg []byte
			withAppender(t, img.logPath, func(app *logbuffer.ExclusiveAppender) {
				msg = make([]byte, 2*app.MaxPayloadLength()+100) // three fragments
				for i := range msg {
					msg[i] = byte(i * 7)
				}
				if _, err := app.Offer(logbuffer.Flow{Limit: 1 << 40, Connected: true}, msg); err != nil {
					t.Fatal(err)
				}
			})

			var got [][]byte
			handle := func(payload []byte) {
				got = append(got, bytes.Clone(payload))
				if len(got) == 1 {
					panic("handler bug")
				}
			}
			var (
				poll  func() error
				stats func() AssemblerStats
			)
			if kind == "FragmentAssembler" {
				a := NewFragmentAssembler(img.MaxMessageLength(), func(p []byte, _ Header) { handle(p) })
				poll = func() error { _, err := img.Poll(a.OnFragment, 10); return err }
				stats = a.Stats
			} else {
				a := logbuffer.NewControlledFragmentAssembler(img.MaxMessageLength(), func(p []byte, _ Header) Action { handle(p); return Continue })
				poll = func() error { _, err := img.ControlledPoll(a.OnFragment, 10); return err }
				stats = a.Stats
			}
			func() {
				defer func() {
					if r := recover(); r != "handler bug" {
						t.Errorf("recovered %v; want the handler's panic", r)
					}
				}()
				_ = poll()
			}()
			if err := poll(); err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("%d deliveries; want 2, the panicked one and the one after", len(got))
			}
			for i, m := range got {
				if !bytes.Equal(m, msg) {
					t.Errorf("delivery %d: %d bytes, not the %d offered", i, len(m), len(msg))
				}
			}
			if s := stats(); s != (AssemblerStats{Delivered: 1}) {
				t.Errorf("stats %+v; want 1 delivered, nothing discarded or orphaned", s)
			}
		})
	}
}
