package pipeline

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// TestTLSAndATokenRenewedInItsFile: ferry publishes through a broker of its own that takes
// TLS with a certificate of a CA of the test's, and authenticates every client by token on
// its binary and its admin ports (test/infra: PulsarSecurity). ferry's token is read from
// a file (pulsar.auth.token_file); the first one expires while ferry runs. The broker checks
// every connection's token every 5 s and asks for a new one once it expired; ferry reads the
// file again and answers with the token written there once its producer was connected.
// Every record arrives once, in order, no producer failure shows in the status, and the
// status says the topic deduplicates: ferry asked the admin API over TLS with its token.
func TestTLSAndATokenRenewedInItsFile(t *testing.T) {
	const n = 200
	dir := t.TempDir()
	sec, broker := securedBroker(t, dir, infra.PulsarOptions{AuthRefresh: 5 * time.Second})
	sc := newStreamConfig(t, "")
	_, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	before := pub.publish(t, 0, n)
	cfg := newFerryConfig(t, sc)
	tokenFile := filepath.Join(dir, "ferry.token")
	cfg.Pulsar = pulsarSection{ServiceURL: broker.ServiceURLTLS, AdminURL: broker.AdminURLTLS,
		TLS: &tlsSection{CAFile: sec.CAFile}, Auth: &authSection{TokenFile: tokenFile}}
	path := cfg.write(t)
	statusURL := "http://" + cfg.HTTP.Listen
	recording := func(check func(*messages.RecordingStatus) error) func() error {
		return func() error {
			st, err := findStream(t, statusURL, sc.Name)
			if err != nil {
				return err
			}
			if f := failureOf(st, "producer"); f != nil {
				t.Fatalf("a producer failure: %v", f)
			}
			r := recordingOf(st, pub.recordingID)
			if r == nil {
				return fmt.Errorf("no recording %d in the status yet", pub.recordingID)
			}
			return check(r)
		}
	}

	// The first token: long enough for ferry to start and connect its producer with it.
	expires := time.Now().Add(30 * time.Second)
	first, err := sec.Token("ferry", expires)
	if err != nil {
		t.Fatal(err)
	}
	writeToken(t, tokenFile, first)
	f := startFerry(t, path)
	waitFor(t, f, 20*time.Second, "the producer connected with the first token", recording(func(r *messages.RecordingStatus) error {
		if r.Producer != "ready" {
			return fmt.Errorf("producer %q, want ready", r.Producer)
		}
		return nil
	}))
	// Renewed well before the first expires (its exp is in whole seconds, and the broker
	// may take it for expired a second early).
	if left := time.Until(expires); left < 5*time.Second {
		t.Fatalf("ferry's producer took until %s before the first token's expiry to connect: the test needs it connected with that token", left)
	}
	second, err := sec.Token("ferry", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	writeToken(t, tokenFile, second)
	waitFor(t, f, 60*time.Second, "the first records published", recording(func(r *messages.RecordingStatus) error {
		switch {
		case r.GetCommittedPosition() < before[n-1]:
			return fmt.Errorf("committed up to %d, want %d", r.GetCommittedPosition(), before[n-1])
		case r.Deduplication != "enabled":
			return fmt.Errorf("deduplication %q, want enabled (asked over TLS with the token)", r.Deduplication)
		}
		return nil
	}))

	// The first token is expired once the broker refuses it.
	ca, err := os.ReadFile(sec.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	https := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	eventually.NoError(t, time.Until(expires)+30*time.Second, func() error {
		req, err := http.NewRequest(http.MethodGet, broker.AdminURLTLS+"/admin/v2/clusters", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+first)
		resp, err := https.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			return fmt.Errorf("the first token still taken: %s", resp.Status)
		}
		return nil
	})
	// The broker asks for a new token within its 5 s check, and says when it took one.
	eventually.NoError(t, 30*time.Second, func() error {
		log, err := os.ReadFile(broker.Log())
		if err != nil {
			return err
		}
		switch {
		case strings.Contains(string(log), "Refreshed authentication credentials for role ferry"):
			return nil
		case strings.Contains(string(log), "Closing connection after timeout on refreshing auth credentials"):
			return fmt.Errorf("the broker closed a connection that did not answer its challenge within its check interval; its log ends:\n%s", broker.LogTail())
		}
		return fmt.Errorf("the broker has not refreshed ferry's credentials; its log ends:\n%s", broker.LogTail())
	})
	after := pub.publish(t, n, 2*n)
	waitFor(t, f, 60*time.Second, "the records after the first token expired", recording(func(r *messages.RecordingStatus) error {
		if r.GetCommittedPosition() < after[n-1] {
			return fmt.Errorf("committed up to %d, want %d", r.GetCommittedPosition(), after[n-1])
		}
		return nil
	}))
	f.mustStop()

	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: broker.ServiceURLTLS, TLSTrustCertsFilePath: sec.CAFile,
		Authentication: pulsar.NewAuthenticationToken(sec.AdminToken), OperationTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	assertExactlyOnceInOrder(t, readTopicWith(t, client, sc.Topic, 2*n, 30*time.Second), payloads(0, 2*n))
}

// securedBroker starts a broker of the test's own, in dir, with opts and the TLS and token
// authentication of a PulsarSecurity made there; it is stopped when the test ends.
func securedBroker(t *testing.T, dir string, opts infra.PulsarOptions) (*infra.PulsarSecurity, *infra.Pulsar) {
	t.Helper()
	sec, err := infra.NewPulsarSecurity(filepath.Join(dir, "security"))
	if err != nil {
		t.Fatal(err)
	}
	opts.Dir, opts.Security = filepath.Join(dir, "pulsar"), sec
	broker, err := infra.StartPulsar(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := broker.Stop(); err != nil {
			t.Errorf("stop the secured broker: %v", err)
		}
	})
	return sec, broker
}

// writeToken replaces file with token in one step, as a renewal would.
func writeToken(t *testing.T, file, token string) {
	t.Helper()
	tmp := file + ".new"
	if err := os.WriteFile(tmp, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// TestATokenThatMayOnlyProduceSkipsTheResumeReadLoudly: ferry's token may produce to the
// topic's namespace but not consume it (a broker of its own that authorizes: test/infra,
// PulsarOptions.Authorize). Publishing needs no read, and the first 200 records go through.
// Resumed from its checkpoint, ferry reads what the broker stored last from the recording's
// producer, which the broker refuses: the read is tried five times, then given up, and the
// status shows a topic-read failure naming the refusal and the permission to grant. The
// records recorded while ferry was down are published all the same, and the topic holds
// the 400 once each, in order.
func TestATokenThatMayOnlyProduceSkipsTheResumeReadLoudly(t *testing.T) {
	const n = 200
	dir := t.TempDir()
	sec, broker := securedBroker(t, dir, infra.PulsarOptions{Authorize: true})
	if err := broker.Grant(context.Background(), "public/default", "ferry", "produce"); err != nil {
		t.Fatal(err)
	}
	token, err := sec.Token("ferry", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "ferry.token")
	writeToken(t, tokenFile, token)

	sc := newStreamConfig(t, "")
	_, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	before := pub.publish(t, 0, n)
	cfg := newFerryConfig(t, sc)
	cfg.Pulsar = pulsarSection{ServiceURL: broker.ServiceURL, AdminURL: broker.AdminURL, Auth: &authSection{TokenFile: tokenFile}}
	path := cfg.write(t)
	statusURL := "http://" + cfg.HTTP.Listen
	committed := func(to int64) func() error {
		return func() error {
			st, err := findStream(t, statusURL, sc.Name)
			if err != nil {
				return err
			}
			if r := recordingOf(st, pub.recordingID); r == nil || r.GetCommittedPosition() < to {
				return fmt.Errorf("recording %d committed to %d, want %d", pub.recordingID, r.GetCommittedPosition(), to)
			}
			return nil
		}
	}
	f := startFerry(t, path)
	waitFor(t, f, 60*time.Second, "the first records published", committed(before[n-1]))
	f.mustStop()

	after := pub.publish(t, n, 2*n)
	f = startFerry(t, path)
	var failure *messages.Failure
	waitFor(t, f, 60*time.Second, "the resume's read given up", func() error {
		st, err := findStream(t, statusURL, sc.Name)
		if err != nil {
			return err
		}
		if failure = failureOf(st, "topic-read"); failure == nil || !strings.Contains(failure.Message, "5 reads failed") {
			return fmt.Errorf("topic-read failure %v, want the read given up", failure)
		}
		return nil
	})
	if !strings.Contains(failure.Message, "cannot read what the broker stored last in "+sc.Topic) || !strings.Contains(failure.Message, "AuthorizationError") ||
		!strings.Contains(failure.Message, "grant the role consume as well as produce") {
		t.Fatalf("topic-read failure %q; want it naming the topic, the broker's refusal and the permission to grant", failure.Message)
	}
	waitFor(t, f, 60*time.Second, "the records recorded while ferry was down", committed(after[n-1]))
	f.mustStop()

	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: broker.ServiceURL,
		Authentication: pulsar.NewAuthenticationToken(sec.AdminToken), OperationTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	assertExactlyOnceInOrder(t, readTopicWith(t, client, sc.Topic, 2*n, 30*time.Second), payloads(0, 2*n))
}
