// Package pulsaradmin asks a Pulsar broker's admin REST API what ferry needs to know of a
// topic and cannot learn over the binary protocol: how many partitions it has, whether the
// broker deduplicates it (lesson 21), the largest message its policy takes, whether it is
// terminated, and which producers are connected to it. It reads, and changes nothing.
package pulsaradmin

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Client is an admin API client. Safe for concurrent use.
type Client struct {
	base  string
	http  *http.Client
	token func() (string, error)
}

// Options configure a Client.
type Options struct {
	// URL is the broker's web service, http://host:8080 or https://host:8443.
	URL string
	// TLS configures https; nil: the system's defaults.
	TLS *tls.Config
	// Token returns the bearer token of each request; nil: none.
	Token func() (string, error)
}

// New returns a client of the admin API at o.URL.
func New(o Options) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.TLS != nil {
		tr.TLSClientConfig = o.TLS
	}
	// Each request also has its caller's context; this bounds one that has none.
	return &Client{base: strings.TrimSuffix(o.URL, "/"), http: &http.Client{Transport: tr, Timeout: time.Minute, CheckRedirect: keepAuthorization}, token: o.Token}
}

// keepAuthorization follows a broker's redirect to the topic's owner, another broker of
// the cluster, with the token: Go's client drops the Authorization header on a redirect to
// another host, and the owner would answer 401. Not from https to http.
func keepAuthorization(req *http.Request, via []*http.Request) error {
	switch {
	case len(via) >= 10:
		return errors.New("stopped after 10 redirects")
	case via[0].URL.Scheme == "https" && req.URL.Scheme != "https":
		return fmt.Errorf("refusing a redirect from https to %s", req.URL)
	}
	if auth := via[0].Header.Get("Authorization"); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return nil
}

// Partitions returns how many partitions topic has: 0 for a non-partitioned topic. For a
// topic that does not exist, a broker may answer 0 or 404 (a *StatusError), depending on its
// version and on topic auto-creation: ferry asks only about topics its producers created.
func (c *Client) Partitions(ctx context.Context, topic string) (int, error) {
	var meta struct {
		Partitions int `json:"partitions"`
	}
	err := c.get(ctx, topic, "partitions", "", func(body io.Reader) error { return json.NewDecoder(body).Decode(&meta) })
	if err != nil {
		return 0, err
	}
	return meta.Partitions, nil
}

// Deduplication returns the broker's deduplication status of a topic (a partition of a
// partitioned one) as its stats report it: "Enabled" or "Disabled", while it changes
// "Recovering" or "Removing", "Initialized" before it is set up (the topic just loaded),
// "Failed" when the broker could not set it up.
func (c *Client) Deduplication(ctx context.Context, topic string) (string, error) {
	var status *string
	err := c.get(ctx, topic, "stats", statsQuery, func(body io.Reader) error {
		return decodeField(body, "deduplicationStatus", &status)
	})
	if err != nil {
		return "", err
	}
	if status == nil {
		return "", fmt.Errorf("the stats of %s do not report deduplicationStatus (a partitioned topic's own stats do not; ask a partition)", topic)
	}
	return *status, nil
}

// MaxMessageSize returns the maxMessageSize policy of topic (0: none set), which the broker
// holds each message to, besides its own maxMessageSize, when it is lower: the size of the
// message as the broker receives it, its metadata and framing included. The topic's local
// policy applies, or, without one, its global one (set with --global). A partitioned
// topic's policy is its partitions' (a partition has none of its own). A broker with topic
// policies disabled (405) has none.
func (c *Client) MaxMessageSize(ctx context.Context, topic string) (int, error) {
	for _, query := range []string{"", "isGlobal=true"} {
		var size int
		set := false
		err := c.get(ctx, topic, "maxMessageSize", query, func(body io.Reader) error {
			b, err := io.ReadAll(body)
			if err != nil || len(b) == 0 { // 204 No Content: no policy
				return err
			}
			set = true
			return json.Unmarshal(b, &size)
		})
		var se *StatusError
		switch {
		case errors.As(err, &se) && se.Code == http.StatusMethodNotAllowed:
			return 0, nil
		case err != nil || set: // a local policy, even 0 (no limit), hides the global one
			return max(size, 0), err
		}
	}
	return 0, nil
}

// Publishers returns the names of the producers connected to topic (a partition of a
// partitioned one), as its stats list them.
func (c *Client) Publishers(ctx context.Context, topic string) ([]string, error) {
	var publishers *[]struct {
		ProducerName string `json:"producerName"`
	}
	err := c.get(ctx, topic, "stats", publishersQuery, func(body io.Reader) error {
		return decodeField(body, "publishers", &publishers)
	})
	if err != nil {
		return nil, err
	}
	if publishers == nil {
		return nil, fmt.Errorf("the stats of %s do not list its publishers (a partitioned topic's own do not; ask a partition)", topic)
	}
	names := make([]string, 0, len(*publishers))
	for _, p := range *publishers {
		names = append(names, p.ProducerName)
	}
	return names, nil
}

// Terminated reports whether topic (a partition of a partitioned one) is terminated, as its
// internal stats say: its managed ledger's state is Terminated. A topic terminated while
// messages were being written to it can stay fenced, refusing producers with TopicFenced
// rather than TopicTerminated (Pulsar 4.0.8, docs/findings.md); this tells the two apart.
func (c *Client) Terminated(ctx context.Context, topic string) (bool, error) {
	var state *string
	err := c.get(ctx, topic, "internalStats", "", func(body io.Reader) error {
		return decodeField(body, "state", &state)
	})
	if err != nil {
		return false, err
	}
	if state == nil {
		return false, fmt.Errorf("the internal stats of %s do not report its state (a partitioned topic's own do not; ask a partition)", topic)
	}
	return *state == "Terminated", nil
}

// statsQuery asks for the stats without what costs the broker work ferry does not need: the
// backlog size of every subscription (it takes a lock on the ledger, and the v2 API computes
// it unless told not to), precise backlogs, and the lists of publishers and consumers
// (brokers older than the parameters ignore them).
const statsQuery = "subscriptionBacklogSize=false&getPreciseBacklog=false&getEarliestTimeInBacklog=false&excludePublishers=true&excludeConsumers=true"

// publishersQuery is statsQuery with the publishers.
const publishersQuery = "subscriptionBacklogSize=false&getPreciseBacklog=false&getEarliestTimeInBacklog=false&excludeConsumers=true"

// get reads the answer to GET /admin/v2/<domain>/<tenant>/<namespace>/<topic>/<what>?<query>
// with read (an empty one for 204 No Content, the answer for a policy not set).
func (c *Client) get(ctx context.Context, topic, what, query string, read func(io.Reader) error) error {
	path, err := topicPath(topic)
	if err != nil {
		return err
	}
	target := c.base + "/admin/v2/" + path + "/" + what
	if query != "" {
		target += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	if c.token != nil {
		tok, err := c.token()
		if err != nil {
			return fmt.Errorf("the token for the admin API: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("admin API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if err != nil {
			return fmt.Errorf("admin API: reading the answer to GET %s: %w", req.URL.Path, err)
		}
		return &StatusError{Code: resp.StatusCode, Path: req.URL.Path, Reason: reason(body)}
	}
	if err := read(io.LimitReader(resp.Body, maxAnswer)); err != nil {
		return fmt.Errorf("admin API: the answer to GET %s is not what Pulsar sends (or longer than %d MiB): %w", req.URL.Path, maxAnswer>>20, err)
	}
	return nil
}

// maxAnswer bounds an answer of the admin API ferry reads.
const maxAnswer = 256 << 20

// decodeField decodes the member name of the JSON object r holds into into (left as it is
// when the object has none), token by token: the other members — a topic's stats grow with
// its subscriptions to megabytes — are read past, not held in memory, as decoding the
// whole object into a struct would (json.Decoder buffers a value whole before it decodes
// it).
func decodeField(r io.Reader, name string, into any) error {
	d := json.NewDecoder(r)
	if t, err := d.Token(); err != nil {
		return err
	} else if t != json.Delim('{') {
		return fmt.Errorf("want an object, found %v", t)
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		if t == name {
			return d.Decode(into)
		}
		if err := skipValue(d); err != nil {
			return err
		}
	}
	return nil
}

// skipValue reads past the next value of d, token by token.
func skipValue(d *json.Decoder) error {
	depth := 0
	for {
		t, err := d.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// StatusError is an answer other than 200 OK.
type StatusError struct {
	Code   int
	Path   string
	Reason string // the broker's, when it gave one
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("admin API: GET %s: %d %s", e.Path, e.Code, http.StatusText(e.Code))
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	switch {
	case e.Code == http.StatusUnauthorized:
		msg += " (the broker did not take ferry's credentials: check the token in pulsar.auth, missing, expired or invalid)"
	case e.Code == http.StatusForbidden:
		msg += " (ferry's role needs permission to produce to or consume the topic)"
	case e.Code >= 500:
		msg += " (the broker could not answer now: restarting, or moving the topic's bundle?)"
	}
	return msg
}

// reason is the broker's explanation in an error answer ({"reason": "..."}), or the start
// of the body.
func reason(body []byte) string {
	var r struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(body, &r) == nil && r.Reason != "" {
		return r.Reason
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// topicPath turns persistent://tenant/namespace/topic into persistent/tenant/namespace/topic,
// each part escaped.
func topicPath(topic string) (string, error) {
	domain, rest, ok := strings.Cut(topic, "://")
	parts := strings.Split(rest, "/")
	if !ok || (domain != "persistent" && domain != "non-persistent") || len(parts) != 3 || slices.Contains(parts, "") {
		return "", errors.New("pulsaradmin: " + topic + " is not a full topic name (persistent://tenant/namespace/topic)")
	}
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return domain + "/" + strings.Join(parts, "/"), nil
}
