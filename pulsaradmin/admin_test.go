package pulsaradmin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"
)

// The admin API's paths are the topic name's parts, each escaped; anything but a full
// topic name is refused before a request is made.
func TestTopicPath(t *testing.T) {
	for _, tt := range []struct{ topic, want string }{
		{"persistent://public/default/orders", "persistent/public/default/orders"},
		{"persistent://public/default/orders-partition-2", "persistent/public/default/orders-partition-2"},
		{"non-persistent://t/ns/a b", "non-persistent/t/ns/a%20b"},
		{"persistent://t/ns/a?b", "persistent/t/ns/a%3Fb"},
		{"orders", ""},
		{"persistent://public/orders", ""},
		{"persistent://public//orders", ""},
		{"persistent://a/b/c/d", ""},
		{"kafka://a/b/c", ""},
	} {
		got, err := topicPath(tt.topic)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("topicPath(%q) = %q, %v; want %q", tt.topic, got, err, tt.want)
		}
	}
}

// An error answer carries the broker's reason, and a refusal says what is missing:
// credentials the broker takes (401), or a permission (403).
func TestStatusErrorSaysWhy(t *testing.T) {
	e := &StatusError{Code: http.StatusNotFound, Path: "/admin/v2/persistent/a/b/c/stats", Reason: reason([]byte(`{"reason":"Topic persistent://a/b/c not found"}`))}
	if got := e.Error(); got != "admin API: GET /admin/v2/persistent/a/b/c/stats: 404 Not Found: Topic persistent://a/b/c not found" {
		t.Errorf("404: %q", got)
	}
	e = &StatusError{Code: http.StatusForbidden, Path: "/p", Reason: reason([]byte("<html>" + strings.Repeat("x", 300)))}
	if got := e.Error(); !strings.Contains(got, "403 Forbidden: <html>xxx") || !strings.HasSuffix(got, "permission to produce to or consume the topic)") || len(got) > 400 {
		t.Errorf("403: %q", got)
	}
	e = &StatusError{Code: http.StatusUnauthorized, Path: "/p"}
	if got := e.Error(); !strings.HasSuffix(got, "check the token in pulsar.auth, missing, expired or invalid)") {
		t.Errorf("401: %q", got)
	}
}

// A redirect to the topic's owner (another broker) keeps the token, which Go's client drops
// on a redirect to another host; a redirect from https to http is refused.
func TestARedirectKeepsTheToken(t *testing.T) {
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0k" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"deduplicationStatus":"Enabled"}`))
	}))
	defer owner.Close()
	ownerURL := strings.Replace(owner.URL, "127.0.0.1", "localhost", 1) // another host, as Go's client sees it
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, ownerURL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer first.Close()
	c := New(Options{URL: first.URL, Token: func() (string, error) { return "t0k", nil }})
	if got, err := c.Deduplication(context.Background(), "persistent://public/default/orders"); err != nil || got != "Enabled" {
		t.Fatalf("Deduplication = %q, %v; want Enabled through the redirect", got, err)
	}
	downgrade := &http.Request{URL: &url.URL{Scheme: "http", Host: "b"}, Header: http.Header{}}
	if err := keepAuthorization(downgrade, []*http.Request{{URL: &url.URL{Scheme: "https", Host: "a"}, Header: http.Header{"Authorization": {"Bearer x"}}}}); err == nil {
		t.Fatal("a redirect from https to http was followed")
	}
}

// A topic's stats grow with its subscriptions, consumers and publishers: an answer of
// megabytes still gives the deduplication status, read past rather than held in memory,
// and ferry asks the broker to leave out what costs it work (every subscription's backlog
// size takes a lock on the ledger) or only adds bytes.
func TestDeduplicationOfATopicWithLargeStats(t *testing.T) {
	subs := make([]string, 0, 100000)
	for i := range 100000 {
		// A member of the same name deeper down is not the topic's.
		subs = append(subs, fmt.Sprintf(`"sub-%d":{"msgBacklog":0,"type":"Exclusive","consumers":[],"deduplicationStatus":"Disabled"}`, i))
	}
	body := `{"msgRateIn":0,"subscriptions":{` + strings.Join(subs, ",") + `},"publishers":[],"deduplicationStatus":"Enabled"}`
	if len(body) < 8<<20 {
		t.Fatalf("the stats are %d bytes; the test wants more than 8 MiB", len(body))
	}
	var query url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	c := New(Options{URL: srv.URL})
	// Garbage counts in the heap until collected: collected often, the heap's growth is
	// what the read holds.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	runtime.GC()
	metrics.Read(heap)
	base, peak := heap[0].Value.Uint64(), uint64(0)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the heap's size while the answer is read
		defer close(sampled)
		for {
			metrics.Read(heap)
			peak = max(peak, heap[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	got, err := c.Deduplication(context.Background(), "persistent://public/default/orders-partition-0")
	close(done)
	<-sampled
	if err != nil || got != "Enabled" {
		t.Fatalf("Deduplication = %q, %v; want Enabled", got, err)
	}
	// A decoder holding the answer whole grows the heap by more than its size; read past,
	// the members are garbage as soon as they are read.
	if grown := int64(peak) - int64(base); grown > int64(len(body))/2 {
		t.Errorf("reading %d MiB of stats grew the heap by %d MiB: the answer was held in memory", len(body)>>20, grown>>20)
	}
	for name, want := range map[string]string{"subscriptionBacklogSize": "false", "getPreciseBacklog": "false", "excludePublishers": "true", "excludeConsumers": "true"} {
		if got := query.Get(name); got != want {
			t.Errorf("asked with %s=%q; want %q", name, got, want)
		}
	}
}

// A topic's maxMessageSize policy is read as the broker answers it (Pulsar 4.0.8, checked by
// hand and by the pipeline test of a record over it): 204 No Content when none is set, the
// number when one is; the local policy, or without one the global one; a partitioned topic is
// asked by its own name (a partition answers 412); 405 (topic policies disabled) is none.
func TestMaxMessageSizeOfATopic(t *testing.T) {
	policies := map[string]string{
		"/admin/v2/persistent/public/default/capped/maxMessageSize":               "1000",
		"/admin/v2/persistent/public/default/capped/maxMessageSize?isGlobal=true": "3000",
		"/admin/v2/persistent/public/default/global/maxMessageSize?isGlobal=true": "2000",
		"/admin/v2/persistent/public/default/zero/maxMessageSize":                 "0",
		"/admin/v2/persistent/public/default/zero/maxMessageSize?isGlobal=true":   "1000",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch body, ok := policies[r.URL.RequestURI()]; {
		case r.URL.Path == "/admin/v2/persistent/public/default/open/maxMessageSize",
			r.URL.Path == "/admin/v2/persistent/public/default/global/maxMessageSize" && r.URL.RawQuery == "":
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/admin/v2/persistent/public/default/nopolicies/maxMessageSize":
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = io.WriteString(w, `{"reason":"Topic level policies is disabled"}`)
		case ok:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"reason":"Topic not found"}`)
		}
	}))
	defer srv.Close()
	c := New(Options{URL: srv.URL})
	for topic, want := range map[string]int{"persistent://public/default/capped": 1000, "persistent://public/default/global": 2000, "persistent://public/default/open": 0, "persistent://public/default/nopolicies": 0, "persistent://public/default/zero": 0} {
		if got, err := c.MaxMessageSize(context.Background(), topic); err != nil || got != want {
			t.Errorf("MaxMessageSize(%s) = %d, %v; want %d", topic, got, err, want)
		}
	}
	var se *StatusError
	if _, err := c.MaxMessageSize(context.Background(), "persistent://public/default/gone"); !errors.As(err, &se) || se.Code != http.StatusNotFound {
		t.Errorf("MaxMessageSize of a topic the broker does not know: %v; want a 404 StatusError", err)
	}
}

// A topic's terminated state is its managed ledger's, the internal stats' top-level state (a
// cursor's state, deeper down, is not it).
func TestTerminatedReadsTheLedgersState(t *testing.T) {
	states := map[string]string{
		"/admin/v2/persistent/public/default/done/internalStats": `{"cursors":{"pulsar.dedup":{"state":"Open"}},"state":"Terminated","ledgers":[]}`,
		"/admin/v2/persistent/public/default/open/internalStats": `{"state":"LedgerOpened","cursors":{"c":{"state":"Terminated"}}}`,
		"/admin/v2/persistent/public/default/odd/internalStats":  `{"cursors":{"c":{"state":"Terminated"}}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, states[r.URL.Path])
	}))
	defer srv.Close()
	c := New(Options{URL: srv.URL})
	for topic, want := range map[string]bool{"persistent://public/default/done": true, "persistent://public/default/open": false} {
		if got, err := c.Terminated(context.Background(), topic); err != nil || got != want {
			t.Errorf("Terminated(%s) = %t, %v; want %t", topic, got, err, want)
		}
	}
	if _, err := c.Terminated(context.Background(), "persistent://public/default/odd"); err == nil {
		t.Errorf("Terminated of internal stats without a state: no error")
	}
}

// The producers connected to a topic are its stats' publishers, asked for (the other stats
// ferry reads exclude them).
func TestPublishersOfATopic(t *testing.T) {
	var query url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"msgRateIn":0,"publishers":[{"producerName":"ferry-s-7","producerId":1},{"producerName":"other"}],"subscriptions":{}}`)
	}))
	defer srv.Close()
	got, err := New(Options{URL: srv.URL}).Publishers(context.Background(), "persistent://public/default/t")
	if err != nil || !slices.Equal(got, []string{"ferry-s-7", "other"}) {
		t.Fatalf("Publishers = %v, %v; want ferry-s-7 and other", got, err)
	}
	if query.Get("excludePublishers") == "true" {
		t.Errorf("asked with excludePublishers=true")
	}
}
