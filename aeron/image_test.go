package aeron

import (
	"fmt"
	"slices"
	"testing"

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
			log, err := logbuffer.Open(img.logPath)
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			app, err := logbuffer.NewExclusiveAppender(log)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				if _, err := app.Offer(logbuffer.Flow{Limit: 1 << 40, Connected: true}, fmt.Appendf(nil, "msg-%d", i)); err != nil {
					t.Fatal(err)
				}
			}
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
